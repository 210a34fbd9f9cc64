//go:build dpdk && linux && amd64 && cgo

package eal

/*
#cgo pkg-config: libdpdk
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"

	"github.com/packetio/packetio"
)

// Error is a DPDK failure: the operation, the errno DPDK gave and its
// message. ENOTSUP and ENOSYS match packetio.ErrUnsupported.
type Error struct {
	Op    string
	Errno syscall.Errno
	Msg   string
}

// Error renders the failure with DPDK's message.
func (e *Error) Error() string {
	if e.Msg != "" {
		return "dpdk: " + e.Msg
	}
	return fmt.Sprintf("dpdk: %s: %v", e.Op, e.Errno)
}

// Unwrap returns the errno, so errors.Is(err, os.ErrNotExist) and the like
// work.
func (e *Error) Unwrap() error { return e.Errno }

// Is reports ErrUnsupported for the errnos that mean "this driver cannot".
func (e *Error) Is(target error) bool {
	return target == packetio.ErrUnsupported && (e.Errno == syscall.ENOTSUP || e.Errno == syscall.ENOSYS)
}

type errBuf [C.PIO_ERRLEN]C.char

func (b *errBuf) ptr() *C.char { return &b[0] }

func (b *errBuf) err(op string, rc C.int) error {
	if rc >= 0 {
		return nil
	}
	return &Error{Op: op, Errno: syscall.Errno(-rc), Msg: C.GoString(&b[0])}
}

var (
	initMu   sync.Mutex
	initDone bool
	initErr  error
	initArgv []string
)

// Init starts the EAL with a, once per process: later calls return the
// first call's result and ignore their arguments (the EAL cannot be started
// twice, not even after cleanup). Started reports what it was started with.
//
// rte_eal_init pins the thread that calls it to the main lcore, so it runs
// on a goroutine locked to its own OS thread that never unlocks: the pinned
// thread never returns to the Go scheduler's pool.
func Init(a Args) error {
	initMu.Lock()
	defer initMu.Unlock()
	if initDone {
		return initErr
	}
	if err := a.Validate(); err != nil {
		return err
	}
	argv := a.Argv()
	parent := runtimeParent()
	_, statErr := os.Stat(parent)
	parentExisted := statErr == nil
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		// The strings stay allocated for the process: the EAL keeps
		// argv and getopt permutes it.
		cargv := C.malloc(C.size_t(len(argv)+1) * C.size_t(unsafeSizeofPtr))
		ptrs := cArgv(cargv, len(argv)+1)
		for i, s := range argv {
			ptrs[i] = C.CString(s)
		}
		ptrs[len(argv)] = nil
		var eb errBuf
		rc := C.pio_eal_init(C.int(len(argv)), (**C.char)(cargv), eb.ptr())
		done <- eb.err("rte_eal_init", rc)
		select {} // keep the pinned thread out of the scheduler's pool
	}()
	initErr = <-done
	initDone = true
	if initErr == nil {
		// With --no-shconf the EAL writes nothing into its runtime
		// directory but creates it anyway; leave nothing behind.
		if dir := C.GoString(C.pio_runtime_dir()); dir != "" {
			os.Remove(dir)
		}
	}
	if !parentExisted {
		os.Remove(parent) // only if empty
	}
	initArgv = argv
	return initErr
}

// Started returns the EAL's arguments, or nil before Init.
func Started() []string {
	initMu.Lock()
	defer initMu.Unlock()
	return initArgv
}

// Layout is what the DPDK headers say about mbufs, for checking the pure-Go
// constants of the queue package.
type Layout struct {
	MbufSize, Headroom, ObjHeader int
	Offsets                       map[string]int
	Flags                         map[string]uint64
}

// HeaderLayout reads the layout out of the DPDK headers.
func HeaderLayout() Layout {
	var l C.pio_layout
	C.pio_layout_get(&l)
	return Layout{
		MbufSize: int(l.mbuf_size), Headroom: int(l.headroom), ObjHeader: int(l.obj_header),
		Offsets: map[string]int{
			"buf_addr": int(l.buf_addr), "buf_iova": int(l.buf_iova), "data_off": int(l.data_off),
			"ol_flags": int(l.ol_flags), "pkt_len": int(l.pkt_len), "data_len": int(l.data_len),
			"buf_len": int(l.buf_len), "pool": int(l.pool), "next": int(l.next), "tx_offload": int(l.tx_offload),
		},
		Flags: map[string]uint64{
			"rx_ip_good": uint64(l.rx_ip_good), "rx_l4_good": uint64(l.rx_l4_good),
			"tx_ipv4": uint64(l.tx_ipv4), "tx_ipv6": uint64(l.tx_ipv6), "tx_ip_cksum": uint64(l.tx_ip_cksum),
			"tx_tcp_cksum": uint64(l.tx_tcp_cksum), "tx_udp_cksum": uint64(l.tx_udp_cksum), "tx_tcp_seg": uint64(l.tx_tcp_seg),
		},
	}
}

// ErrNoPort is returned by FindPort when no port has the name.
var ErrNoPort = errors.New("dpdk: no such port")

// runtimeParent is where the EAL makes its runtime directories: /var/run/dpdk
// for root, $XDG_RUNTIME_DIR/dpdk (or /tmp/dpdk) otherwise.
func runtimeParent() string {
	if os.Geteuid() == 0 {
		return "/var/run/dpdk"
	}
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" {
		return x + "/dpdk"
	}
	return "/tmp/dpdk"
}
