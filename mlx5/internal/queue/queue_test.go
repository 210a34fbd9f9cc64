package queue

import (
	"testing"

	"github.com/packetio/packetio"
)

func TestRegionNeverPanics(t *testing.T) {
	r := NewRegion(make([]byte, 4*2048), 2048)
	if r.NumFrames() != 4 || r.FrameSize() != 2048 || len(r.Bytes()) != 8192 {
		t.Fatal("geometry")
	}
	for _, d := range []packetio.Desc{
		{Addr: 8192, Len: 1}, {Addr: ^uint64(0), Len: 64}, {Addr: 8191, Len: 2}, {Addr: 1 << 40},
	} {
		if r.Frame(d) != nil {
			t.Errorf("Frame(%+v) not nil", d)
		}
	}
	if w := r.Writable(packetio.Desc{Addr: 2048 + 7}); len(w) != 2041 || cap(w) != 2041 {
		t.Fatalf("Writable len %d cap %d", len(w), cap(w))
	}
	if f := r.Frame(packetio.Desc{Addr: 100, Len: 50}); len(f) != 50 || cap(f) != 50 {
		t.Fatal("Frame capacity not clipped")
	}
	if r.Writable(packetio.Desc{Addr: 8192}) != nil || r.Writable(packetio.Desc{Addr: ^uint64(0)}) != nil {
		t.Fatal("Writable outside")
	}
}

func TestConstructorsRefuseMissingParts(t *testing.T) {
	if _, err := NewTx(TxConfig{Iface: "x"}); err == nil {
		t.Fatal("NewTx without rings")
	}
	if _, err := NewRx(RxConfig{Iface: "x"}); err == nil {
		t.Fatal("NewRx without a ring")
	}
	d := &Device{}
	if d.TxQueue(0) != nil || d.RxQueue(-1) != nil || d.Close() != nil || d.Close() != nil {
		t.Fatal("empty device")
	}
}
