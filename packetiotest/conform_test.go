package packetiotest

import (
	"testing"
)

func TestTestFrameRoundTrip(t *testing.T) {
	buf := make([]byte, 2048)
	for seq := uint32(0); seq < 64; seq++ {
		n := testFrame(buf, seq, sizeFor(seq, 1514))
		got, ours, intact := parseTestFrame(buf[:n])
		if !ours || !intact || got != seq {
			t.Fatalf("seq %d: parsed (%d, %v, %v)", seq, got, ours, intact)
		}
		buf[n-1] ^= 1
		if _, _, intact := parseTestFrame(buf[:n]); intact {
			t.Fatalf("seq %d: a flipped last byte still parses as intact", seq)
		}
		if _, _, intact := parseTestFrame(buf[:n-1]); intact {
			t.Fatalf("seq %d: a truncated frame parses as intact", seq)
		}
	}
	if n := testFrame(buf[:40], 1, 60); n != 0 {
		t.Fatalf("testFrame wrote %d bytes into a 40-byte frame", n)
	}
	if _, ours, _ := parseTestFrame(make([]byte, 60)); ours {
		t.Fatal("a zero frame parses as ours")
	}
}

func FuzzParseTestFrame(f *testing.F) {
	buf := make([]byte, 2048)
	f.Add(buf[:testFrame(buf, 7, 128)])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		seq, ours, intact := parseTestFrame(b)
		if intact {
			want := make([]byte, len(b))
			testFrame(want, seq, len(b))
			if string(want) != string(b) || !ours {
				t.Fatalf("accepted a frame it would not build")
			}
		}
	})
}
