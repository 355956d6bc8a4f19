// Package e2e holds the end-to-end tests of jazz: they build the binary
// once and drive it as a subprocess against in-test servers speaking the
// real wire formats (see e2e/chatserver), asserting what a caller sees:
// stdout, stderr, exit codes and what reached the provider.
package e2e
