//go:build dpdk && linux && amd64 && cgo

package eal

/*
#include "shim.h"
*/
import "C"

import (
	"syscall"

	"github.com/packetio/packetio/dpdk/internal/flow"
)

// Control-plane calls run on the calling goroutine's thread, which should
// be locked (a virtual device over a kernel interface opens its socket in
// that thread's network namespace). They are not safe to call concurrently;
// the dpdk package serialises them.

// FindPort returns the port the EAL gave the device named name.
func FindPort(name string) (uint16, bool) {
	cs := C.CString(name)
	defer cfree(cs)
	var p C.uint16_t
	if C.pio_find_port(cs, &p) != 0 {
		return 0, false
	}
	return uint16(p), true
}

// Probe hot-plugs devargs and returns the port it made, named name.
func Probe(devargs, name string) (uint16, error) {
	ca, cn := C.CString(devargs), C.CString(name)
	defer cfree(ca)
	defer cfree(cn)
	var p C.uint16_t
	var eb errBuf
	if err := eb.err("probe", C.pio_probe(ca, cn, &p, eb.ptr())); err != nil {
		return 0, err
	}
	return uint16(p), nil
}

// Info is what a port says about itself.
type Info struct {
	Driver, Name                 string
	Socket                       int
	IfIndex                      uint32
	MaxRxQueues, MaxTxQueues     int
	RxDescMax, TxDescMax         int
	MinRxBufSize, MaxRxPktLen    uint32
	RxOffloadCapa, TxOffloadCapa uint64
	MAC                          [6]byte
}

// PortInfo reads rte_eth_dev_info and the MAC address.
func PortInfo(port uint16) (Info, error) {
	var d C.pio_dev_info
	var eb errBuf
	if err := eb.err("dev_info", C.pio_dev_info_get(C.uint16_t(port), &d, eb.ptr())); err != nil {
		return Info{}, err
	}
	in := Info{
		Driver: C.GoString(&d.driver[0]), Name: C.GoString(&d.name[0]),
		Socket: int(d.socket), IfIndex: uint32(d.if_index),
		MaxRxQueues: int(d.max_rx_queues), MaxTxQueues: int(d.max_tx_queues),
		RxDescMax: int(d.rx_desc_max), TxDescMax: int(d.tx_desc_max),
		MinRxBufSize: uint32(d.min_rx_bufsize), MaxRxPktLen: uint32(d.max_rx_pktlen),
		RxOffloadCapa: uint64(d.rx_offload_capa), TxOffloadCapa: uint64(d.tx_offload_capa),
	}
	for i := range in.MAC {
		in.MAC[i] = byte(d.mac[i])
	}
	return in, nil
}

// Offloads are packetio's names for the offloads a port is configured
// with.
type Offloads uint32

// The offload bits.
const (
	RxChecksum Offloads = C.PIO_RX_CHECKSUM
	TxChecksum Offloads = C.PIO_TX_CHECKSUM
	TxTSO      Offloads = C.PIO_TX_TSO
)

// Configure sets the queue counts and asks for offloads, each only where the
// port claims it, and returns the offloads the configuration kept.
func Configure(port uint16, nrx, ntx int, want Offloads) (Offloads, error) {
	var kept C.uint32_t
	var eb errBuf
	rc := C.pio_configure(C.uint16_t(port), C.uint16_t(nrx), C.uint16_t(ntx), C.uint32_t(want), &kept, eb.ptr())
	return Offloads(kept), eb.err("configure", rc)
}

// RxQueueSetup sets up receive queue q over mp.
func RxQueueSetup(port uint16, q, depth, socket int, mp *Mempool) error {
	var eb errBuf
	return eb.err("rx_queue_setup", C.pio_rx_queue_setup(C.uint16_t(port), C.uint16_t(q), C.uint16_t(depth), C.int(socket), mp.mp, eb.ptr()))
}

// TxQueueSetup sets up transmit queue q.
func TxQueueSetup(port uint16, q, depth, socket int) error {
	var eb errBuf
	return eb.err("tx_queue_setup", C.pio_tx_queue_setup(C.uint16_t(port), C.uint16_t(q), C.uint16_t(depth), C.int(socket), eb.ptr()))
}

// Start starts the port.
func Start(port uint16) error {
	var eb errBuf
	return eb.err("start", C.pio_start(C.uint16_t(port), eb.ptr()))
}

// Stop stops the port; the driver frees what its rings held.
func Stop(port uint16) error {
	var eb errBuf
	return eb.err("stop", C.pio_stop(C.uint16_t(port), eb.ptr()))
}

// CloseRemove closes the port and removes its device, so the same device
// can be probed again.
func CloseRemove(port uint16) error {
	var eb errBuf
	return eb.err("close", C.pio_close_remove(C.uint16_t(port), eb.ptr()))
}

// Promiscuous turns promiscuous mode on or off.
func Promiscuous(port uint16, on bool) error {
	var eb errBuf
	v := C.int(0)
	if on {
		v = 1
	}
	return eb.err("promiscuous", C.pio_promiscuous(C.uint16_t(port), v, eb.ptr()))
}

// MTU is rte_eth_dev_get_mtu: the MTU the port is configured with.
func MTU(port uint16) (int, error) {
	var m C.uint16_t
	if rc := C.pio_get_mtu(C.uint16_t(port), &m); rc != 0 {
		return 0, &Error{Op: "get_mtu", Errno: syscall.Errno(-rc)}
	}
	return int(m), nil
}

// Stats are rte_eth_stats.
type Stats struct {
	InPackets, OutPackets, InBytes, OutBytes, Missed, InErrors, OutErrors, NoBuffer uint64
}

// PortStats reads rte_eth_stats.
func PortStats(port uint16) (Stats, error) {
	var s C.pio_stats
	if rc := C.pio_stats_get(C.uint16_t(port), &s); rc != 0 {
		return Stats{}, &Error{Op: "stats", Errno: syscall.Errno(-rc)}
	}
	return Stats{uint64(s.ipackets), uint64(s.opackets), uint64(s.ibytes), uint64(s.obytes),
		uint64(s.imissed), uint64(s.ierrors), uint64(s.oerrors), uint64(s.rx_nombuf)}, nil
}

const xstatNameSize = 64 // RTE_ETH_XSTATS_NAME_SIZE

// XStats reads the port's extended counters by name. It allocates;
// monitoring only.
func XStats(port uint16) (map[string]uint64, error) {
	n := C.pio_xstats_get(C.uint16_t(port), nil, nil, 0)
	if n < 0 {
		return nil, &Error{Op: "xstats", Errno: syscall.Errno(-n)}
	}
	if n == 0 {
		return map[string]uint64{}, nil
	}
	names := make([]byte, int(n)*xstatNameSize)
	values := make([]uint64, n)
	got := xstatsGet(port, names, values)
	if got < 0 {
		return nil, &Error{Op: "xstats", Errno: syscall.Errno(-got)}
	}
	m := make(map[string]uint64, got)
	for i := 0; i < int(got); i++ {
		b := names[i*xstatNameSize : (i+1)*xstatNameSize]
		for j, c := range b {
			if c == 0 {
				b = b[:j]
				break
			}
		}
		m[string(b)] = values[i]
	}
	return m, nil
}

// FlowEngine is a port's rte_flow API, as flow.Engine.
type FlowEngine struct{ Port uint16 }

var _ flow.Engine = FlowEngine{}

func flowErr(op string, e *C.pio_flow_err) error {
	if e.rc == 0 {
		return nil
	}
	return &flow.Error{Op: op, Errno: int(e.err_no), Type: int(e._type), Message: C.GoString(&e.message[0])}
}

// Isolate calls rte_flow_isolate(port, 1).
func (f FlowEngine) Isolate() error {
	var e C.pio_flow_err
	C.pio_flow_isolate(C.uint16_t(f.Port), &e)
	return flowErr("isolate", &e)
}

// Flush calls rte_flow_flush.
func (f FlowEngine) Flush() error {
	var e C.pio_flow_err
	C.pio_flow_flush(C.uint16_t(f.Port), &e)
	return flowErr("flush", &e)
}

// Validate calls rte_flow_validate.
func (f FlowEngine) Validate(fl flow.Flow) error { return f.create(fl, true) }

// Create calls rte_flow_validate, then rte_flow_create.
func (f FlowEngine) Create(fl flow.Flow) error { return f.create(fl, false) }

func (f FlowEngine) create(fl flow.Flow, validateOnly bool) error {
	if len(fl.Items) == 0 || len(fl.Queues) == 0 {
		return &flow.Error{Op: "validate", Errno: int(syscall.EINVAL), Message: "empty flow"}
	}
	items := make([]C.pio_flow_item, len(fl.Items))
	for i, it := range fl.Items {
		c := &items[i]
		c._type = C.uint8_t(it.Type)
		c.proto, c.proto_mask = C.uint8_t(it.Proto), C.uint8_t(it.ProtoMask)
		for j := 0; j < 6; j++ {
			c.dst_mac[j], c.dst_mac_mask[j] = C.uint8_t(it.DstMAC[j]), C.uint8_t(it.DstMACMask[j])
		}
		c.ether_type, c.ether_type_mask = C.uint16_t(it.EtherType), C.uint16_t(it.EtherTypeMask)
		c.tci, c.tci_mask = C.uint16_t(it.TCI), C.uint16_t(it.TCIMask)
		for j := 0; j < 16; j++ {
			c.src[j], c.src_mask[j] = C.uint8_t(it.Src[j]), C.uint8_t(it.SrcMask[j])
			c.dst[j], c.dst_mask[j] = C.uint8_t(it.Dst[j]), C.uint8_t(it.DstMask[j])
		}
		c.src_port, c.src_port_mask = C.uint16_t(it.SrcPort), C.uint16_t(it.SrcPortMask)
		c.dst_port, c.dst_port_mask = C.uint16_t(it.DstPort), C.uint16_t(it.DstPortMask)
	}
	queues := make([]C.uint16_t, len(fl.Queues))
	for i, q := range fl.Queues {
		queues[i] = C.uint16_t(q)
	}
	v := C.int(0)
	if validateOnly {
		v = 1
	}
	var e C.pio_flow_err
	C.pio_flow_create(C.uint16_t(f.Port), &items[0], C.int(len(items)), &queues[0], C.int(len(queues)), v, &e)
	op := "create"
	if validateOnly {
		op = "validate"
	}
	return flowErr(op, &e)
}
