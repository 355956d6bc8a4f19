package busclient_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/jazz-run/jazz/busclient"
	"github.com/jazz-run/jazz/internal/testutil"
)

// TestCredsFileOnAnAccountsServer: a deployment with its own operator,
// accounts and user JWTs (not `jazz bus serve`) is reached with --creds:
// the user's .creds file connects, its seed is the key decisions are
// signed with, and a user JWT from an account the server does not trust
// is refused with the credentials named as the cause.
func TestCredsFileOnAnAccountsServer(t *testing.T) {
	op, _ := nkeys.CreateOperator()
	opPub, _ := op.PublicKey()
	opClaims := jwt.NewOperatorClaims(opPub)
	if _, err := opClaims.Encode(op); err != nil {
		t.Fatal(err)
	}
	account := func(signer nkeys.KeyPair) (nkeys.KeyPair, string) {
		acc, _ := nkeys.CreateAccount()
		pub, _ := acc.PublicKey()
		tok, err := jwt.NewAccountClaims(pub).Encode(signer)
		if err != nil {
			t.Fatal(err)
		}
		return acc, tok
	}
	acc, accJWT := account(op)
	accPub, _ := acc.PublicKey()
	resolver := &server.MemAccResolver{}
	if err := resolver.Store(accPub, accJWT); err != nil {
		t.Fatal(err)
	}
	srv := testutil.StartNATS(t, testutil.NATSOptions{Listen: true, Configure: func(o *server.Options) {
		o.TrustedOperators, o.AccountResolver = []*jwt.OperatorClaims{opClaims}, resolver
	}})

	dir := t.TempDir()
	creds := func(name string, issuer nkeys.KeyPair) (string, string) {
		u, _ := nkeys.CreateUser()
		pub, _ := u.PublicKey()
		seed, _ := u.Seed()
		tok, err := jwt.NewUserClaims(pub).Encode(issuer)
		if err != nil {
			t.Fatal(err)
		}
		b, err := jwt.FormatUserConfig(tok, seed)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name+".creds")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p, pub
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	good, goodPub := creds("alice", acc)
	o := busclient.Options{URL: srv.URL, Creds: good}
	b, err := busclient.Connect(ctx, o)
	if err != nil {
		t.Fatalf("a valid .creds file: %v", err)
	}
	nc := b.Conn()
	if err := nc.Publish("jazz.probe", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	kp, err := o.Signer()
	if err != nil {
		t.Fatalf("signer from .creds: %v", err)
	}
	if pub, _ := kp.PublicKey(); pub != goodPub {
		t.Fatalf("decisions would be signed by %s, not the user %s", pub, goodPub)
	}

	stranger, _ := account(op) // signed by the operator, unknown to the resolver
	bad, _ := creds("mallory", stranger)
	if _, err := busclient.Connect(ctx, busclient.Options{URL: srv.URL, Creds: bad}); err == nil || !strings.Contains(err.Error(), "refused these credentials") {
		t.Fatalf("a user of an account the server does not know: %v", err)
	}
	if _, err := busclient.Connect(ctx, busclient.Options{URL: srv.URL, Creds: filepath.Join(dir, "missing.creds")}); err == nil || !strings.Contains(err.Error(), "credentials file") {
		t.Fatalf("a missing .creds file: %v", err)
	}
	if _, err := busclient.Connect(ctx, busclient.Options{URL: srv.URL, Creds: good, Nkey: good}); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("--creds with --nkey: %v", err)
	}
}
