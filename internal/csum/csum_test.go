package csum

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestChecksum: RFC 1071's worked example, odd lengths, and a sum large
// enough to carry many times.
func TestChecksum(t *testing.T) {
	if got := Checksum([]byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}, 0); got != ^uint16(0xddf2) {
		t.Fatalf("RFC 1071 example: %#x", got)
	}
	if got := Checksum([]byte{0x01}, 0); got != ^uint16(0x0100) {
		t.Fatalf("one byte: %#x", got)
	}
	big := bytes.Repeat([]byte{0xff}, 65536)
	if got := Checksum(big, 0); got != 0 {
		t.Fatalf("all ones: %#x", got)
	}
}

// TestSumAfter: a buffer summed in pieces cut anywhere (odd lengths, empty
// pieces, all-ones bytes that carry) gives the checksum of the whole.
func TestSumAfter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		b := make([]byte, r.IntN(200))
		for j := range b {
			b[j] = byte(r.Uint32())
			if i%3 == 0 {
				b[j] = 0xff
			}
		}
		acc := uint32(r.Uint32() >> 8) // a pseudo-header's running sum
		want := Checksum(b, acc)
		s, n := acc, 0
		for n < len(b) {
			k := min(len(b)-n, r.IntN(9))
			s = SumAfter(b[n:n+k], s, n)
			n += k
		}
		if got := ^Fold(s); got != want {
			t.Fatalf("%d bytes from %#x in pieces: %#x, whole %#x", len(b), acc, got, want)
		}
	}
}

// FuzzSumAfter: any cut of any buffer.
func FuzzSumAfter(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5}, uint8(1), uint32(7))
	f.Fuzz(func(t *testing.T, b []byte, cut uint8, acc uint32) {
		k := int(cut) % (len(b) + 1)
		acc >>= 1
		if got, want := ^Fold(SumAfter(b[k:], SumAfter(b[:k], acc, 0), k)), Checksum(b, acc); got != want {
			t.Fatalf("cut at %d of %d: %#x, whole %#x", k, len(b), got, want)
		}
	})
}
