package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jazz-run/jazz/safefile"
)

// DefaultURL is models.dev's catalog; JAZZ_MODELS_DEV_URL names a mirror.
const DefaultURL = "https://models.dev/api.json"

// MaxAge is how long a fetched catalog stays fresh (providers.md §4).
const MaxAge = time.Hour

// MaxBytes bounds a catalog document, fetched or cached.
const MaxBytes = 32 << 20

// FetchTimeout bounds one fetch when its context has no deadline.
const FetchTimeout = 20 * time.Second

// ErrOffline is a fetch refused because JAZZ_OFFLINE is set.
var ErrOffline = errors.New("JAZZ_OFFLINE is set: jazz makes no request of its own")

// Source is where a fresher catalog comes from: models.dev (or a mirror),
// mirrored to JAZZ_HOME/cache/models-dev.json. It never touches the
// network unless Refresh is called.
type Source struct {
	// Home is JAZZ_HOME; "" keeps no cache.
	Home string
	// Getenv reads JAZZ_OFFLINE and JAZZ_MODELS_DEV_URL; nil reads none.
	Getenv func(string) string
	// Client fetches. Without one Refresh fails: the caller always chooses
	// the bounds and the proxy (an httpx client).
	Client *http.Client
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

func (s Source) env(k string) string {
	if s.Getenv == nil {
		return ""
	}
	return strings.TrimSpace(s.Getenv(k))
}

// Offline says whether JAZZ_OFFLINE (1 or true) forbids fetching.
func (s Source) Offline() bool {
	v := strings.ToLower(s.env("JAZZ_OFFLINE"))
	return v == "1" || v == "true"
}

// URL is the catalog's address.
func (s Source) URL() string {
	if u := s.env("JAZZ_MODELS_DEV_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// CachePath is the mirrored copy, "" without a Home.
func (s Source) CachePath() string {
	if s.Home == "" {
		return ""
	}
	return filepath.Join(s.Home, "cache", "models-dev.json")
}

func (s Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Load is the catalog to use now, without any network: the cached copy
// laid over the embedded snapshot, or the snapshot alone. stale says the
// cache is missing or older than MaxAge (a Refresh would help); warning
// names a cache that could not be used.
func (s Source) Load(ctx context.Context) (cat *Catalog, stale bool, warning string) {
	snap := Snapshot()
	path := s.CachePath()
	if path == "" {
		return snap, true, ""
	}
	fi, err := os.Stat(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			warning = fmt.Sprintf("model catalog cache %s: %v; using the built-in snapshot", path, err)
		}
		return snap, true, warning
	}
	data, _, err := safefile.Read(ctx, path, safefile.Options{MaxBytes: MaxBytes, What: "model catalog cache", Private: true})
	if err != nil {
		return snap, true, fmt.Sprintf("%v; using the built-in snapshot", err)
	}
	fresh, err := Parse(data)
	if err != nil {
		return snap, true, fmt.Sprintf("model catalog cache %s: %v; using the built-in snapshot", path, err)
	}
	return snap.Over(fresh), s.now().Sub(fi.ModTime()) > MaxAge, ""
}

// Refresh fetches the catalog, checks that it parses, mirrors it to the
// cache and returns it over the snapshot. It fails with ErrOffline when
// JAZZ_OFFLINE is set, and never blocks past ctx (FetchTimeout when ctx
// has no deadline). A failed cache write is a warning: the fetched
// catalog is still good for this process.
func (s Source) Refresh(ctx context.Context) (cat *Catalog, warning string, err error) {
	if s.Offline() {
		return nil, "", ErrOffline
	}
	if s.Client == nil {
		return nil, "", errors.New("model catalog: no HTTP client given")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, FetchTimeout)
		defer cancel()
	}
	url := s.URL()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, "", fmt.Errorf("model catalog %s: %w", url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.Client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("fetch model catalog: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("fetch model catalog %s: HTTP %d", url, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("fetch model catalog %s: %w", url, err)
	}
	if len(data) > MaxBytes {
		return nil, "", fmt.Errorf("fetch model catalog %s: larger than %d bytes", url, MaxBytes)
	}
	fresh, err := Parse(data)
	if err != nil {
		return nil, "", fmt.Errorf("fetch model catalog %s: %w", url, err)
	}
	if path := s.CachePath(); path != "" {
		if werr := writeAtomic(path, data); werr != nil {
			warning = fmt.Sprintf("could not save the model catalog to %s: %v", path, werr)
		}
	}
	return Snapshot().Over(fresh), warning, nil
}

// writeAtomic replaces path with data through a private temp file and a
// rename, so a reader sees the old file or the new one, never a part.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".models-dev-*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
