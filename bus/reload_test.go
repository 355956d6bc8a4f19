package bus

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// refusingFront stands before a real server and refuses the first n
// logins the two ways a nats-server reloading its users refuses one half
// done (valid or not): by closing the socket after its INFO, or with an
// authorization violation. Later logins pass through untouched.
type refusingFront struct {
	ln      net.Listener
	backend string
	refuse  int64
	seen    atomic.Int64
	wg      sync.WaitGroup
}

func newRefusingFront(t *testing.T, backend string, refuse int) *refusingFront {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &refusingFront{ln: ln, backend: backend, refuse: int64(refuse)}
	f.wg.Add(1)
	go f.serve()
	t.Cleanup(func() { ln.Close(); f.wg.Wait() })
	return f
}

func (f *refusingFront) url() string { return "nats://" + f.ln.Addr().String() }

func (f *refusingFront) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		n := f.seen.Add(1)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer c.Close()
			s, err := net.Dial("tcp", f.backend)
			if err != nil {
				return
			}
			defer s.Close()
			if n <= f.refuse {
				info, err := bufio.NewReader(s).ReadString('\n')
				if err != nil {
					return
				}
				io.WriteString(c, info)
				if n%2 == 0 {
					io.WriteString(c, "-ERR 'Authorization Violation'\r\n")
				}
				return
			}
			go func() { io.Copy(s, c); s.Close() }()
			io.Copy(c, s)
		}()
	}
}

// A login a server refused only because it was reloading its users (as
// `jazz bus serve` does when an approver or worker is added) is tried
// again, so a valid key gets in; a key the server does not know is still
// refused, and said so, after the last try.
func TestLoginRefusedByAReloadIsTriedAgain(t *testing.T) {
	valid, _ := nkeys.CreateUser()
	validPub, _ := valid.PublicKey()
	stranger, _ := nkeys.CreateUser()
	strangerPub, _ := stranger.PublicKey()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
		Nkeys: []*server.NkeyUser{{Nkey: validPub}}})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer s.Shutdown()
	if !s.ReadyForConnections(5 * time.Second) {
		t.Fatal("server not ready")
	}
	login := func(url string, kp nkeys.KeyPair, pub string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b, err := Start(ctx, Options{URL: url, Client: Client{Nkey: &NkeyUser{Public: pub, Sign: kp.Sign},
			ReconnectFor: time.Millisecond}})
		if err != nil {
			return err
		}
		b.CloseNow()
		return nil
	}
	backend := s.Addr().String()

	// Three reloads in a row, both kinds of refusal.
	f := newRefusingFront(t, backend, 3)
	if err := login(f.url(), valid, validPub); err != nil {
		t.Fatalf("a valid key refused three times by reloads: %v", err)
	}
	if got := f.seen.Load(); got != 4 {
		t.Errorf("%d logins reached the server, want 4", got)
	}

	f = newRefusingFront(t, backend, 0)
	start := time.Now()
	if err := login(f.url(), stranger, strangerPub); !errors.Is(err, ErrRefused) {
		t.Fatalf("a key the server does not know: %v, want it refused", err)
	}
	if got := f.seen.Load(); got != loginTries {
		t.Errorf("the stranger tried %d times, want %d", got, loginTries)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a real refusal took %v to be believed", d)
	}
}
