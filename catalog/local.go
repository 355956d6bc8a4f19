package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxLocalBody bounds what a local server's model report may be.
const maxLocalBody = 8 << 20

// LocalWindow is what a local model server says about a model.
type LocalWindow struct {
	// Server is the window the server runs the model with, 0 when it does
	// not say; Max is the model's own maximum, 0 when unknown.
	Server, Max int
}

// OllamaWindow asks Ollama about model: the num_ctx its Modelfile sets,
// else the context the running model was loaded with (/api/ps), for
// Server; the model's trained context length (/api/show model_info) for
// Max. base is OLLAMA_BASE_URL's form (`http://host:11434/api`, /api
// optional).
func OllamaWindow(ctx context.Context, client *http.Client, base, model string) (LocalWindow, error) {
	api := strings.TrimRight(strings.TrimSpace(base), "/")
	api = strings.TrimSuffix(strings.TrimSuffix(api, "/v1"), "/api") + "/api"
	body, _ := json.Marshal(map[string]string{"model": model})
	var show struct {
		Parameters string                     `json:"parameters"`
		ModelInfo  map[string]json.RawMessage `json:"model_info"`
	}
	if err := localJSON(ctx, client, http.MethodPost, api+"/show", body, &show); err != nil {
		return LocalWindow{}, err
	}
	var w LocalWindow
	for _, line := range strings.Split(show.Parameters, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "num_ctx" {
			if n, err := strconv.Atoi(f[1]); err == nil {
				w.Server = tokens(float64(n))
			}
		}
	}
	for k, v := range show.ModelInfo {
		if strings.HasSuffix(k, ".context_length") {
			var n float64
			if json.Unmarshal(v, &n) == nil {
				w.Max = tokens(n)
			}
		}
	}
	if w.Server == 0 {
		var ps struct {
			Models []struct {
				Name          string  `json:"name"`
				Model         string  `json:"model"`
				ContextLength float64 `json:"context_length"`
			} `json:"models"`
		}
		if localJSON(ctx, client, http.MethodGet, api+"/ps", nil, &ps) == nil {
			for _, m := range ps.Models {
				if m.Name == model || m.Model == model {
					w.Server = tokens(m.ContextLength)
				}
			}
		}
	}
	return w, nil
}

// LlamacppWindow asks a llama.cpp server for the context it was started
// with (/props: n_ctx). base is LLAMACPP_BASE_URL's form (`…/v1`).
func LlamacppWindow(ctx context.Context, client *http.Client, base string) (LocalWindow, error) {
	root := strings.TrimSuffix(strings.TrimRight(strings.TrimSpace(base), "/"), "/v1")
	var props struct {
		NCtx     float64 `json:"n_ctx"`
		Defaults struct {
			NCtx float64 `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if err := localJSON(ctx, client, http.MethodGet, root+"/props", nil, &props); err != nil {
		return LocalWindow{}, err
	}
	n := props.Defaults.NCtx
	if n == 0 {
		n = props.NCtx
	}
	return LocalWindow{Server: tokens(n)}, nil
}

// localJSON makes one bounded request to a local server and decodes its
// JSON answer into v.
func localJSON(ctx context.Context, client *http.Client, method, url string, body []byte, v any) error {
	if client == nil {
		return fmt.Errorf("%s: no HTTP client given", url)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxLocalBody+1))
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	if len(data) > maxLocalBody {
		return fmt.Errorf("%s: answer larger than %d bytes", url, maxLocalBody)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	return nil
}
