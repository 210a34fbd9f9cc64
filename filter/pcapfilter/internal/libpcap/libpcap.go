//go:build pcap && cgo

// Package libpcap compiles filter expressions with the system libpcap, with
// the optimiser on or off, for pcapfilter's comparison tests (gopacket's
// pcap.CompileBPFFilter always optimises). It needs cgo and libpcap-dev and
// builds only with the pcap tag; nothing but tests uses it.
package libpcap

/*
#cgo LDFLAGS: -lpcap
#include <stdlib.h>
#include <pcap.h>

static int compile(const char *expr, int optimize, struct bpf_program *prog, char *err, size_t errlen) {
	pcap_t *p = pcap_open_dead(DLT_EN10MB, 65535);
	if (p == NULL) {
		snprintf(err, errlen, "pcap_open_dead failed");
		return -1;
	}
	int rc = pcap_compile(p, prog, expr, optimize, PCAP_NETMASK_UNKNOWN);
	if (rc < 0) {
		snprintf(err, errlen, "%s", pcap_geterr(p));
	}
	pcap_close(p);
	return rc;
}
*/
import "C"

import (
	"errors"
	"sync"
	"unsafe"

	"golang.org/x/net/bpf"
)

// mu serialises calls: older libpcaps keep parser state in globals.
var mu sync.Mutex

// Compile compiles expr for a dead DLT_EN10MB handle with snaplen 65535 and
// an unknown netmask, as tcpdump -ddd would, with or without libpcap's
// optimiser.
func Compile(expr string, optimize bool) ([]bpf.RawInstruction, error) {
	mu.Lock()
	defer mu.Unlock()
	cexpr := C.CString(expr)
	defer C.free(unsafe.Pointer(cexpr))
	var prog C.struct_bpf_program
	var errbuf [C.PCAP_ERRBUF_SIZE]C.char
	opt := C.int(0)
	if optimize {
		opt = 1
	}
	if C.compile(cexpr, opt, &prog, &errbuf[0], C.size_t(len(errbuf))) < 0 {
		return nil, errors.New(C.GoString(&errbuf[0]))
	}
	defer C.pcap_freecode(&prog)
	insns := unsafe.Slice(prog.bf_insns, int(prog.bf_len))
	out := make([]bpf.RawInstruction, len(insns))
	for i, in := range insns {
		out[i] = bpf.RawInstruction{Op: uint16(in.code), Jt: uint8(in.jt), Jf: uint8(in.jf), K: uint32(in.k)}
	}
	return out, nil
}
