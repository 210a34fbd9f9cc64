//go:build dpdk && linux && amd64 && cgo

package eal

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import "unsafe"

const unsafeSizeofPtr = unsafe.Sizeof(uintptr(0))

// cArgv views n char* slots of C memory at p as a Go slice.
func cArgv(p unsafe.Pointer, n int) []*C.char { return unsafe.Slice((**C.char)(p), n) }

// cfree frees a C.CString.
func cfree(p *C.char) { C.free(unsafe.Pointer(p)) }

// xstatsGet fills names (xstatNameSize bytes each) and values, one per
// counter; both must hold len(values) entries.
func xstatsGet(port uint16, names []byte, values []uint64) C.int {
	return C.pio_xstats_get(C.uint16_t(port), (*C.char)(unsafe.Pointer(&names[0])), (*C.uint64_t)(unsafe.Pointer(&values[0])), C.int(len(values)))
}
