package pcapfile

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

func frame(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i)
	}
	copy(b[12:], []byte{0x08, 0x00, 0x45}) // IPv4
	return b
}

// TestRoundTrip: what Write writes, NewReader reads back byte for byte, with
// the stamps and the interface, and the snap length cuts but keeps the length.
func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, "test", 100, []Iface{{Name: "q0"}, {Name: "q1", Filter: "udp"}})
	if err != nil {
		t.Fatal(err)
	}
	in := []struct {
		ifc int
		ns  int64
		f   []byte
	}{{0, 1_700_000_000_123456789, frame(60, 1)}, {1, 1_700_000_000_123456790, frame(200, 2)}, {0, 1_700_000_001_000000001, frame(64, 3)}}
	for _, p := range in {
		if err := w.Write(p.ifc, p.ns, p.f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Stats(0, time.Unix(1, 0), time.Unix(2, 0), 2, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil || r.Format != "pcapng" {
		t.Fatal(r, err)
	}
	for i, p := range in {
		data, ci, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		want := p.f[:min(len(p.f), 100)]
		if !bytes.Equal(data, want) || ci.Length != len(p.f) || ci.Timestamp.UnixNano() != p.ns || ci.InterfaceIndex != p.ifc {
			t.Errorf("packet %d: %d bytes %+v, want %d of %d at %d on %d", i, len(data), ci, len(want), len(p.f), p.ns, p.ifc)
		}
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Errorf("after the last: %v", err)
	}
}

// TestReadsPcap: classic pcap, both resolutions, is read too.
func TestReadsPcap(t *testing.T) {
	for _, nano := range []bool{false, true} {
		var buf bytes.Buffer
		var w *pcapgo.Writer
		if nano {
			w = pcapgo.NewWriterNanos(&buf)
		} else {
			w = pcapgo.NewWriter(&buf)
		}
		if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
			t.Fatal(err)
		}
		f := frame(60, 9)
		var ci = captureInfo(time.Unix(5, 7000), len(f))
		if err := w.WritePacket(ci, f); err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(&buf)
		if err != nil || r.Format != "pcap" {
			t.Fatal(err)
		}
		data, got, err := r.Next()
		if err != nil || !bytes.Equal(data, f) || !got.Timestamp.Equal(ci.Timestamp) {
			t.Errorf("nano %v: %v %v %v", nano, err, got, data)
		}
	}
}

func TestRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"text", []byte("hello world")},
		{"truncated pcapng", []byte{0x0a, 0x0d, 0x0d, 0x0a, 1, 2}},
	} {
		if _, err := NewReader(bytes.NewReader(tc.in)); err == nil {
			t.Errorf("%s: read", tc.name)
		}
	}
	if _, err := NewWriter(io.Discard, "x", -1, []Iface{{}}); err == nil {
		t.Error("negative snaplen taken")
	}
	if _, err := NewWriter(io.Discard, "x", 0, nil); err == nil {
		t.Error("no interfaces taken")
	}
}

func TestFilter(t *testing.T) {
	udp := frame(60, 0)
	copy(udp[12:], []byte{0x08, 0x00, 0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17})
	tcp := bytes.Clone(udp)
	tcp[23] = 6
	for _, tc := range []struct {
		expr     string
		udp, tcp bool
	}{{"udp", true, false}, {"tcp", false, true}, {"ip", true, true}, {"ip6", false, false}} {
		f, err := NewFilter(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		if f.Match(udp) != tc.udp || f.Match(tcp) != tc.tcp {
			t.Errorf("%q: udp %v tcp %v", tc.expr, f.Match(udp), f.Match(tcp))
		}
	}
	if _, err := NewFilter("port"); err == nil {
		t.Error("a bad expression compiled")
	}
	if !(*Filter)(nil).Match(nil) {
		t.Error("a nil filter refused")
	}
}

// TestNoAllocs: writing a frame and filtering one allocate nothing.
func TestNoAllocs(t *testing.T) {
	w, err := NewWriter(io.Discard, "x", 0, []Iface{{Name: "q0"}})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := NewFilter("udp or tcp")
	b := frame(60, 0)
	if n := testing.AllocsPerRun(1000, func() {
		f.Match(b)
		if err := w.Write(0, 1, b); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per frame", n)
	}
}

// FuzzReader: no input makes the reader panic or loop.
func FuzzReader(f *testing.F) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, "x", 0, []Iface{{Name: "q0"}})
	w.Write(0, 1, frame(60, 0))
	w.Flush()
	f.Add(buf.Bytes())
	var p bytes.Buffer
	pw := pcapgo.NewWriter(&p)
	pw.WriteFileHeader(100, layers.LinkTypeEthernet)
	pw.WritePacket(captureInfo(time.Unix(1, 0), 60), frame(60, 0))
	f.Add(p.Bytes())
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := NewReader(bytes.NewReader(in))
		if err != nil {
			return
		}
		for range 1000 {
			if _, _, err := r.Next(); err != nil {
				return
			}
		}
	})
}

// FuzzFilter: any expression either compiles or is refused, and a compiled
// one runs on any frame without panicking.
func FuzzFilter(f *testing.F) {
	for _, s := range []string{"udp", "tcp port 80", "vlan 10 and ip6", "ether[0] = 1", "port"} {
		f.Add(s, frame(60, 0))
	}
	f.Fuzz(func(t *testing.T, expr string, b []byte) {
		fl, err := NewFilter(expr)
		if err != nil {
			return
		}
		fl.Match(b)
	})
}
