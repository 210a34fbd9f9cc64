package netstack

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/pipe"
)

var (
	macA = net.HardwareAddr{0x02, 0, 0, 0, 0, 0xa}
	macB = net.HardwareAddr{0x02, 0, 0, 0, 0, 0xb}
)

// checkGoroutines fails the test if goroutines started during it are still
// running when it ends (after its other cleanups, which run first).
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutine leak: %d before, %d after\n%s", before, n, buf)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// devices makes a pipe and closes both ends when the test ends.
func devices(t *testing.T, opts ...pipe.Option) (packetio.Device, packetio.Device) {
	t.Helper()
	a, b, err := pipe.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// newStack starts a stack and closes it when the test ends (before the
// device closes: cleanups run last-in first-out).
func newStack(t *testing.T, dev packetio.Device, cfg Config) *Stack {
	t.Helper()
	s, err := New(dev, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// stackPair is two stacks joined by a pipe, A at .1/::1 and B at .2/::2.
func stackPair(t *testing.T, cfgA, cfgB Config, opts ...pipe.Option) (*Stack, *Stack) {
	t.Helper()
	checkGoroutines(t)
	da, db := devices(t, opts...)
	if !cfgA.Addr.IsValid() {
		cfgA.Addr = netip.MustParsePrefix("10.0.0.1/24")
		cfgA.Addr6 = netip.MustParsePrefix("fd00::1/64")
	}
	if !cfgB.Addr.IsValid() {
		cfgB.Addr = netip.MustParsePrefix("10.0.0.2/24")
		cfgB.Addr6 = netip.MustParsePrefix("fd00::2/64")
	}
	if cfgA.MAC == nil {
		cfgA.MAC = macA
	}
	if cfgB.MAC == nil {
		cfgB.MAC = macB
	}
	return newStack(t, da, cfgA), newStack(t, db, cfgB)
}

// echoBothFamilies serves an echo on port 7 of a and has b echo n random
// bytes through it over IPv4 (10.0.0.1) and over IPv6 (fd00::1), one
// connection each, then closes the listener and waits for the server.
func echoBothFamilies(t *testing.T, a, b *Stack, n int) {
	t.Helper()
	l, err := a.Listen("tcp", ":7")
	if err != nil {
		t.Fatal(err)
	}
	done := echoServer(t, l)
	for _, addr := range []string{"10.0.0.1:7", "[fd00::1]:7"} {
		c, err := b.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		echo(t, c, randomBytes(t, n))
		c.Close()
	}
	l.Close()
	<-done
}

// echoServer accepts connections on l and echoes each until EOF, then
// closes it. It stops when l is closed; the returned channel then closes.
func echoServer(t *testing.T, l net.Listener) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return done
}

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// echo sends data over c while reading it back, and checks what returns.
func echo(t *testing.T, c net.Conn, data []byte) {
	t.Helper()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			if cw, ok := c.(interface{ CloseWrite() error }); ok {
				err = cw.CloseWrite()
			}
		}
		errc <- err
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read back: %v (after %d of %d bytes)", err, len(got), len(data))
	}
	if werr := <-errc; werr != nil {
		t.Fatalf("write: %v", werr)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("echoed %d bytes, differ from the %d sent (first difference at %d)", len(got), len(data), firstDiff(got, data))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// checkClean fails on counters that must stay zero on a clean link.
func checkClean(t *testing.T, name string, s *Stack) {
	t.Helper()
	st := s.Stats()
	var bad []string
	for _, c := range []struct {
		name string
		v    uint64
	}{
		{"RxBadChecksum", st.RxBadChecksum}, {"RxWrongVLAN", st.RxWrongVLAN}, {"RxRunt", st.RxRunt},
		{"RxTooLong", st.RxTooLong}, {"TxTooBig", st.TxTooBig}, {"UnknownMAC", st.UnknownMAC},
		{"TCPChecksumErrors", st.TCPChecksumErrors},
	} {
		if c.v != 0 {
			bad = append(bad, fmt.Sprintf("%s=%d", c.name, c.v))
		}
	}
	if st.RxPackets == 0 || st.TxPackets == 0 {
		bad = append(bad, fmt.Sprintf("RxPackets=%d TxPackets=%d", st.RxPackets, st.TxPackets))
	}
	if len(bad) > 0 {
		t.Errorf("%s stats: %s\n%+v", name, strings.Join(bad, " "), st)
	}
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// checkTCPOption reads the TCP protocol option of want's type from s and
// reports it unless it equals want: a Config field reaching gVisor.
func checkTCPOption[O comparable, P interface {
	*O
	tcpip.GettableTransportProtocolOption
}](t *testing.T, label string, s *Stack, want O) {
	t.Helper()
	var got O
	if err := s.s.TransportProtocolOption(tcp.ProtocolNumber, P(&got)); err != nil || got != want {
		t.Errorf("%s: %T = %v, %v; want %v", label, got, got, err, want)
	}
}
