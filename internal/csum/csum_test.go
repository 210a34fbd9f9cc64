package csum

import (
	"bytes"
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
