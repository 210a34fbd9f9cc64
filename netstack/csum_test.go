package netstack

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/packetio/packetio"
)

// csumDevice wraps a device so that it offers checksum-only transmit
// offload, as afxdp does with WithTxChecksumOffload: Capabilities says
// TxChecksumOffload and not Offload, and TransmitOffload finishes a
// requested L4 checksum the way the kernel finishes CHECKSUM_PARTIAL (the
// sum from CsumStart to the end of the packet, the field's pseudo-header
// sum included, complemented into the field) and refuses segmentation with
// ErrUnsupported.
type csumDevice struct {
	packetio.Device
	tx []*csumTx
}

type csumTx struct {
	packetio.TxQueue
	finished atomic.Uint64 // checksums finished
	refused  atomic.Uint64 // segmentation requests refused
}

var _ packetio.OffloadTransmitter = (*csumTx)(nil)

func newCsumDevice(d packetio.Device) *csumDevice {
	c := &csumDevice{Device: d}
	for i := 0; i < d.NumTxQueues(); i++ {
		c.tx = append(c.tx, &csumTx{TxQueue: d.TxQueue(i)})
	}
	return c
}

func (d *csumDevice) Capabilities() packetio.Capabilities {
	c := d.Device.Capabilities()
	c.TxChecksumOffload, c.Offload = true, false
	return c
}

func (d *csumDevice) TxQueue(i int) packetio.TxQueue {
	if i < 0 || i >= len(d.tx) {
		return nil
	}
	return d.tx[i]
}

func (q *csumTx) TransmitOffload(descs []packetio.Desc, offs []packetio.Offload) (int, error) {
	if len(offs) != len(descs) {
		return 0, fmt.Errorf("csum: %d offloads for %d descriptors: %w", len(offs), len(descs), packetio.ErrBadLength)
	}
	region := q.Region()
	for i, o := range offs {
		if o.Segmented() {
			q.refused.Add(1)
			return 0, fmt.Errorf("csum: segmentation (GSO type %d): %w", o.GSOType, packetio.ErrUnsupported)
		}
		if o.Flags&packetio.OffloadNeedsCsum == 0 {
			continue
		}
		f := region.Frame(descs[i])
		start, at := int(o.CsumStart), int(o.CsumStart)+int(o.CsumOff)
		if f == nil || at+2 > len(f) {
			return 0, fmt.Errorf("csum: checksum at %d+%d past %d bytes: %w", o.CsumStart, o.CsumOff, len(f), packetio.ErrBadLength)
		}
		binary.BigEndian.PutUint16(f[at:], ^checksum.Checksum(f[start:], 0))
		q.finished.Add(1)
	}
	return q.TxQueue.Transmit(descs), nil
}

// On a device that finishes checksums but does not segment, the endpoint
// cuts the stack's 64 KiB packets itself and leaves each segment's TCP
// checksum to the device: never a segmentation request, every checksum
// right (the far stack verifies each one), over IPv4 and IPv6, both ways.
func TestChecksumOnlyOffload(t *testing.T) {
	checkGoroutines(t)
	da, db := devices(t)
	ca := newCsumDevice(da)
	a := newStack(t, ca, Config{Addr: mustPrefix("10.0.0.1/24"), Addr6: mustPrefix("fd00::1/64"), MAC: macA})
	b := newStack(t, db, Config{Addr: mustPrefix("10.0.0.2/24"), Addr6: mustPrefix("fd00::2/64"), MAC: macB})
	if a.ep.segOffload {
		t.Fatal("the endpoint would hand segmentation to a checksum-only device")
	}
	echoBothFamilies(t, a, b, 1<<20)
	checkClean(t, "A", a)
	checkClean(t, "B", b)
	st := a.Stats()
	if st.GSOPackets == 0 || st.OffloadPackets != 0 || st.OffloadChecksums == 0 {
		t.Errorf("want segments cut by the endpoint with checksums left to the device: %+v", st)
	}
	if n := ca.tx[0].refused.Load(); n != 0 {
		t.Errorf("the endpoint asked a checksum-only device to segment %d times", n)
	}
	if fin := ca.tx[0].finished.Load(); fin != st.OffloadChecksums {
		t.Errorf("the device finished %d checksums, the endpoint counted %d requests", fin, st.OffloadChecksums)
	}
}

// A segment cut for a checksum-only device carries the pseudo-header sum
// of its own length, so that the device's sum over it is the segment's
// checksum; the rest of the segment is as the software path builds it.
func TestSegmentationPartialChecksums(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		t.Run(map[bool]string{false: "v4", true: "v6"}[v6], func(t *testing.T) {
			da, db := devices(t)
			ca := newCsumDevice(da)
			r, err := Config{Addr: mustPrefix("192.0.2.1/24"), Addr6: mustPrefix("fd00::1/64"), MAC: macA}.resolve(ca.Capabilities())
			if err != nil {
				t.Fatal(err)
			}
			e := newEndpoint(ca, &r, func(err error) { t.Errorf("endpoint failed: %v", err) })
			rx := db.RxQueue(0)
			rx.Fill(rx.NumFreeFillSlots())
			data := randomBytes(t, 5000)
			pkt := gsoPacket(t, data, 1448, header.TCPFlagAck|header.TCPFlagPsh, v6)
			defer pkt.DecRef()
			e.AddHeader(pkt)
			q := e.tx[0]
			q.mu.Lock()
			werr := q.write(pkt)
			q.mu.Unlock()
			if werr != nil {
				t.Fatal(werr)
			}
			descs := rx.Receive(64)
			if len(descs) != 4 {
				t.Fatalf("%d frames, want 4", len(descs))
			}
			for i, d := range descs {
				f := rx.Region().Frame(d)
				var l4 []byte
				var addrSum uint16
				if v6 {
					l4 = f[14+40:]
					addrSum = checksum.Checksum(f[14+8:14+40], 0)
				} else {
					l4 = f[14+20 : 14+int(header.IPv4(f[14:]).TotalLength())]
					addrSum = checksum.Checksum(f[14+12:14+20], 0)
				}
				if checksum.Checksum(l4, pseudoSum(addrSum, uint8(header.TCPProtocolNumber), len(l4))) != 0xffff {
					t.Errorf("segment %d: the finished checksum is wrong", i)
				}
			}
			rx.Recycle(descs)
			if st := e.stats.load(); st.OffloadChecksums != 4 || st.GSOFrames != 4 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// The checksum-only path allocates nothing per packet either.
func TestTransmitAllocationsChecksumOffload(t *testing.T) {
	da, db := devices(t)
	ca := newCsumDevice(da)
	r, err := Config{Addr: mustPrefix("192.0.2.1/24"), MAC: macA}.resolve(ca.Capabilities())
	if err != nil {
		t.Fatal(err)
	}
	e := newEndpoint(ca, &r, func(err error) { t.Errorf("endpoint failed: %v", err) })
	rx := db.RxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	pkt := gsoPacket(t, randomBytes(t, 30000), 1448, header.TCPFlagAck, false)
	defer pkt.DecRef()
	e.AddHeader(pkt)
	q := e.tx[0]
	allocs := writeAllocs(t, q, rx, pkt)
	if allocs > 0 && !raceEnabled {
		t.Errorf("%.1f allocations per 21-segment packet", allocs)
	}
	if e.stats.load().OffloadChecksums == 0 {
		t.Error("no checksum was left to the device")
	}
}
