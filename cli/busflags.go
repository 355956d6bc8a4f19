package cli

import (
	"github.com/spf13/pflag"

	"github.com/jazz-run/jazz/busclient"
)

// busFlagText is what a command says about the flags that differ in
// meaning between commands: where the URL defaults to, whose credentials
// --creds and --nkey are.
type busFlagText struct {
	URL, Creds, Nkey string
}

// addBusFlags registers the flags every command that reaches a NATS bus
// shares (run, worker, workers, approvals, bus init): one definition, so
// no command lacks a credential or TLS option another has, and each names
// its environment variable, so no secret needs to ride in a command line.
func addBusFlags(f *pflag.FlagSet, o *busclient.Options, t busFlagText) {
	env := func(help, name string) string { return help + " (env " + name + ")" }
	f.StringVar(&o.URL, "nats-url", "", env(t.URL, busclient.EnvURL))
	f.StringVar(&o.Creds, "creds", "", env(t.Creds, busclient.EnvCreds))
	f.StringVar(&o.Nkey, "nkey", "", env(t.Nkey, busclient.EnvNkey))
	f.StringVar(&o.CA, "tls-ca", "", env("CA certificate (PEM) that signs the server's", busclient.EnvCA))
	f.StringVar(&o.TLSPin, "tls-pin", "", env("sha256:… fingerprint of the server's certificate, instead of a CA", busclient.EnvPin))
	f.StringVar(&o.Cert, "tls-cert", "", env("client certificate (PEM), for a server that asks for one", busclient.EnvCert))
	f.StringVar(&o.Key, "tls-key", "", env("key of --tls-cert (PEM)", busclient.EnvKey))
}
