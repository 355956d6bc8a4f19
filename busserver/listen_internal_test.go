package busserver

import (
	"context"
	"testing"
	"time"
)

// The bus server listens for NATS clients alone, and each one must
// present a listed nkey: no monitoring, websocket, MQTT, leaf node or
// route port, no user without a key, no fallback user for a client that
// presents nothing.
func TestServerOpensNothingButAuthenticatedClients(t *testing.T) {
	s, err := Start(context.Background(), Options{Home: t.TempDir(), Port: -1, Reload: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := s.opts
	if o.HTTPPort != 0 || o.HTTPSPort != 0 || s.srv.MonitorAddr() != nil {
		t.Errorf("monitoring is on: http %d https %d", o.HTTPPort, o.HTTPSPort)
	}
	if o.Websocket.Port != 0 || o.MQTT.Port != 0 || o.LeafNode.Port != 0 || o.Cluster.Port != 0 || o.Gateway.Port != 0 || len(o.Routes) != 0 {
		t.Errorf("another listener: websocket %d mqtt %d leaf %d cluster %d gateway %d routes %v",
			o.Websocket.Port, o.MQTT.Port, o.LeafNode.Port, o.Cluster.Port, o.Gateway.Port, o.Routes)
	}
	if o.NoAuthUser != "" || o.Username != "" || o.Password != "" || o.Authorization != "" || len(o.Users) != 0 || len(o.Accounts) != 0 || o.CustomClientAuthentication != nil {
		t.Errorf("a way in without a listed nkey: noAuthUser %q username %q users %d accounts %d", o.NoAuthUser, o.Username, len(o.Users), len(o.Accounts))
	}
	if len(o.Nkeys) < len(roleSeeds)+1 {
		t.Fatalf("%d nkey users", len(o.Nkeys))
	}
	for _, u := range o.Nkeys {
		if u.Permissions == nil && u.Nkey != s.adminPub {
			t.Errorf("nkey %s has every permission", u.Nkey)
		}
	}
	if o.Host != "127.0.0.1" {
		t.Errorf("listens on %s", o.Host)
	}
}
