package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Credentials an endpoint URL may carry, each in the place vendors put one.
const (
	urlUser     = "Uu7user0token"
	urlPassword = "Pp7pass0word"
	urlQuery    = "Qq7query0key"
	urlFragment = "Ff7frag0ment"
	urlPath     = "Tt7path0token"
)

func credentialsIn(s string) []string {
	var found []string
	for _, c := range []string{urlUser, urlPassword, urlQuery, urlFragment, urlPath} {
		if strings.Contains(s, c) {
			found = append(found, c)
		}
	}
	return found
}

// TestEndpointCredentialsNeverShown: an endpoint URL's user info, path,
// query and fragment never reach a warning, whichever way the endpoint
// is wrong.
func TestEndpointCredentialsNeverShown(t *testing.T) {
	rest := urlUser + ":" + urlPassword + "@collector:4318/v1/" + urlPath + "/traces?api_key=" + urlQuery + "#" + urlFragment
	for _, ep := range []string{
		"ftp://" + rest,            // wrong scheme
		"http://[::1" + rest,       // unparsable
		"http:///" + rest,          // no host
		"collector:4318?k=" + rest, // no scheme
		"http://%zz" + rest,        // bad escape
		"http://a b@" + rest,       // a space in the user info
		"\x00http://" + rest,       // a control character
	} {
		for _, cfg := range []Settings{{Endpoint: ep}, {TracesEndpoint: ep}, {Endpoint: "http://c:4318", MetricsEndpoint: ep}} {
			_, warns := Resolve(cfg, nil)
			var setupWarns []string
			cfg.Enabled = Bool(true)
			Setup(context.Background(), cfg, func(w string) { setupWarns = append(setupWarns, w) })
			all := strings.Join(append(warns, setupWarns...), "\n")
			if all == "" {
				t.Errorf("%q: no warning", ep)
			}
			if c := credentialsIn(all); c != nil {
				t.Errorf("%q: the warning shows %q: %s", ep, c, all)
			}
		}
	}
}

// TestCollectorEchoNeverShowsURLCredentials: a collector that echoes the
// request (its URL, the Basic credentials net/http makes of the user
// info) or redirects to a URL with a token in it gets a warning without
// them.
func TestCollectorEchoNeverShowsURLCredentials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/moved") {
			w.Header().Set("Location", "https://elsewhere.example/v1/"+urlPath+"?token="+urlQuery+"#"+urlFragment)
			w.WriteHeader(http.StatusTemporaryRedirect)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "bad request %s from %s", r.URL.String(), r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, path := range []string{"/v1/traces", "/moved"} {
		endpoint := "http://" + urlUser + ":" + urlPassword + "@" + host + path + "?api_key=" + urlQuery
		e, err := newOTLPSpanExporter(Settings{Protocol: ProtocolHTTPProtobuf, TracesEndpoint: endpoint}, 2*time.Second, "test")
		if err != nil {
			t.Fatal(err)
		}
		_, err = export(t, e)
		_ = e.Shutdown(context.Background())
		if err == nil {
			t.Fatalf("%s: the export succeeded", path)
		}
		if c := credentialsIn(err.Error()); c != nil {
			t.Errorf("%s: the warning shows %q: %v", path, c, err)
		}
		if strings.Contains(err.Error(), "VXU3") { // base64 of "Uu7", the Basic credentials' start
			t.Errorf("%s: the warning shows the Basic credentials: %v", path, err)
		}
	}
}
