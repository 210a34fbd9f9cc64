package packetio

import (
	"bytes"
	"testing"
)

func TestOffloadMarshalLayout(t *testing.T) {
	o := Offload{Flags: OffloadNeedsCsum, GSOType: OffloadGSOTCPv4 | OffloadGSOECN, HdrLen: 0x0102, GSOSize: 0x0304, CsumStart: 0x0506, CsumOff: 0x0708}
	var b [OffloadHdrLen]byte
	o.Marshal(b[:])
	want := []byte{1, 0x81, 0x02, 0x01, 0x04, 0x03, 0x06, 0x05, 0x08, 0x07}
	if !bytes.Equal(b[:], want) {
		t.Fatalf("Marshal = % x, want % x", b, want)
	}
	if got := UnmarshalOffload(b[:]); got != o {
		t.Fatalf("UnmarshalOffload = %+v, want %+v", got, o)
	}
}

func TestOffloadSegmented(t *testing.T) {
	for _, tc := range []struct {
		typ  uint8
		want bool
	}{
		{OffloadGSONone, false}, {OffloadGSOECN, false}, {OffloadGSOTCPv4, true},
		{OffloadGSOTCPv6 | OffloadGSOECN, true}, {OffloadGSOUDP, true},
	} {
		if got := (Offload{GSOType: tc.typ}).Segmented(); got != tc.want {
			t.Errorf("GSOType %#x: Segmented = %v", tc.typ, got)
		}
	}
}

func FuzzOffloadRoundTrip(f *testing.F) {
	f.Add([]byte{1, 1, 54, 0, 0xa8, 5, 34, 0, 16, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < OffloadHdrLen {
			return
		}
		o := UnmarshalOffload(b)
		var out [OffloadHdrLen]byte
		o.Marshal(out[:])
		if !bytes.Equal(out[:], b[:OffloadHdrLen]) {
			t.Fatalf("round trip % x -> % x", b[:OffloadHdrLen], out)
		}
	})
}
