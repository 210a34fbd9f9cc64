package host

import (
	"testing"
	"unsafe"
)

// TestIfreqLayout: struct ifreq is 40 bytes on 64-bit systems (32 on
// 32-bit), with ifr_data right after the 16-byte name.
func TestIfreqLayout(t *testing.T) {
	ptr := unsafe.Sizeof(uintptr(0))
	want := 16 + 2*ptr + 8 // 40 on 64-bit, 32 on 32-bit
	if ptr == 8 && want != 40 {
		t.Fatalf("arithmetic: %d", want)
	}
	if got := unsafe.Sizeof(ifreqData{}); got != want {
		t.Fatalf("sizeof(ifreq) = %d, want %d", got, want)
	}
	if off := unsafe.Offsetof(ifreqData{}.data); off != 16 {
		t.Fatalf("ifr_data at %d, want 16", off)
	}
}
