package netstack

import (
	"bytes"
	"io"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
)

// TestEagerWakeConfig: Config.EagerWake reaches gVisor as
// TCPLazyWakeOption (the fourth patch): lazy by default, eager when set.
func TestEagerWakeConfig(t *testing.T) {
	a, b := stackPair(t, Config{}, Config{EagerWake: true})
	checkTCPOption(t, "default", a, tcpip.TCPLazyWakeOption(true))
	checkTCPOption(t, "EagerWake", b, tcpip.TCPLazyWakeOption(false))
}

// TestLazyWake: with lazy wake-ups (the default) and with EagerWake, a
// stack moves a bulk echo both ways over both families, answers 500
// request/response round trips in order, and serves a connection to its
// own address, whose packets the writer's goroutine delivers without the
// promise to yield (they wake the processor eagerly) and which must not
// wait on it.
func TestLazyWake(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"lazy", Config{}}, {"EagerWake", Config{EagerWake: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := stackPair(t, tc.cfg, tc.cfg)
			echoBothFamilies(t, a, b, 1<<20)

			l, err := a.Listen("tcp", ":9")
			if err != nil {
				t.Fatal(err)
			}
			done := echoServer(t, l)
			defer func() { l.Close(); <-done }()
			c, err := b.Dial("tcp", "10.0.0.1:9")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			req, resp := make([]byte, 64), make([]byte, 64)
			for i := range 500 {
				for j := range req {
					req[j] = byte(i + j)
				}
				if _, err := c.Write(req); err != nil {
					t.Fatalf("round trip %d: write: %v", i, err)
				}
				if _, err := io.ReadFull(c, resp); err != nil {
					t.Fatalf("round trip %d: read: %v", i, err)
				}
				if !bytes.Equal(req, resp) {
					t.Fatalf("round trip %d: answer %x, want %x", i, resp[:8], req[:8])
				}
			}

			self, err := a.Dial("tcp", "10.0.0.1:9")
			if err != nil {
				t.Fatal(err)
			}
			defer self.Close()
			echo(t, self, randomBytes(t, 4<<20))
		})
	}
}
