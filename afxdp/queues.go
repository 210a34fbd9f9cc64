package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/internal/csum"
)

// TxQueue is a transmit queue: the transmit side of one AF_XDP socket. It
// hands completed frames back by address (Reclaim), so a frame received on
// any queue of the device can be transmitted here and returned to its
// receive queue.
type TxQueue struct {
	d      *Device
	s      *xdp.Socket
	index  int
	reg    *region
	addrs  []uint64 // Reclaim scratch
	closed atomic.Bool
}

var (
	_ packetio.TxQueue            = (*TxQueue)(nil)
	_ packetio.OffloadTransmitter = (*TxQueue)(nil)
)

// opErr is the queue's error for op: a *packetio.OpError whose cause is
// err; nil for nil.
func (q *TxQueue) opErr(op string, err error) error {
	return packetio.NewOpError(op, backendName, q.d.name, q.index, err)
}

// Region is the device's frame memory. After the device closes its
// methods return nil; a slice taken before reads zeros and never faults.
func (q *TxQueue) Region() packetio.Region { return q.reg.of(q.s) }

// Alloc takes up to n frames from the queue's pool, never more than the
// transmit ring has room for.
func (q *TxQueue) Alloc(n int) []packetio.Desc {
	if q.closed.Load() {
		return nil
	}
	return q.s.Alloc(n)
}

// Transmit puts the longest valid prefix of descs on the ring and kicks the
// kernel when it must.
func (q *TxQueue) Transmit(descs []packetio.Desc) int {
	if q.closed.Load() {
		return 0
	}
	return q.s.Transmit(descs)
}

// TransmitOffload is Transmit with a checksum request per packet: an
// Offload with OffloadNeedsCsum asks the device to finish the L4 checksum
// from CsumStart, stored CsumOff further on (the field must hold the
// pseudo-header sum); a zero Offload is an ordinary frame. Segmentation is
// refused with ErrUnsupported, an Offload that does not fit its packet
// with ErrBadLength (nothing of the call is sent). Without
// WithTxChecksumOffload it returns ErrUnsupported.
func (q *TxQueue) TransmitOffload(descs []packetio.Desc, offs []packetio.Offload) (int, error) {
	if q.closed.Load() {
		return 0, q.opErr("transmit", packetio.ErrClosed)
	}
	if !q.d.txCsum {
		return 0, q.opErr("transmit", fmt.Errorf("%w: checksum offload needs WithTxChecksumOffload", packetio.ErrUnsupported))
	}
	if len(offs) != len(descs) {
		return 0, q.opErr("transmit", fmt.Errorf("%w: %d offloads for %d descriptors", packetio.ErrBadLength, len(offs), len(descs)))
	}
	first := true // the Offload of a chain rides its first descriptor
	for i, o := range offs {
		d := descs[i]
		start := first
		first = d.Options&packetio.OptContinued == 0
		meta := q.s.TxMeta(d)
		if meta == nil {
			return 0, q.opErr("transmit", fmt.Errorf("%w: descriptor %d at %#x has no metadata room in front of it", packetio.ErrBadLength, i, d.Addr))
		}
		if o == (packetio.Offload{}) || o.Flags&packetio.OffloadNeedsCsum == 0 && !o.Segmented() {
			clear(meta) // no request (a received frame keeps its stamp there)
			continue
		}
		switch {
		case o.Segmented():
			return 0, q.opErr("transmit", fmt.Errorf("%w: segmentation (GSO type %d): AF_XDP offloads checksums only", packetio.ErrUnsupported, o.GSOType))
		case !start:
			return 0, q.opErr("transmit", fmt.Errorf("%w: descriptor %d: an Offload on a chain's continuation", packetio.ErrBadLength, i))
		case int(o.CsumStart)+int(o.CsumOff)+2 > int(d.Len):
			return 0, q.opErr("transmit", fmt.Errorf("%w: descriptor %d: checksum at %d+%d past its %d bytes", packetio.ErrBadLength, i, o.CsumStart, o.CsumOff, d.Len))
		}
		if d.Options&packetio.OptContinued != 0 {
			// A chain: Linux's copy mode (XDP_UMEM_TX_SW_CSUM)
			// sends a chain's requested checksum wrong, as if summed
			// over the first frame alone (6.18 here;
			// TestTransmitChecksumOffloadChain). The checksum of a
			// chain is finished here, frame by frame, and no request
			// goes to the kernel.
			q.finishChainChecksum(descs[i:], o)
			clear(meta)
			continue
		}
		_ = xdp.TxMetadata{Flags: xdp.TxMetaChecksum, CsumStart: o.CsumStart, CsumOffset: o.CsumOff}.Put(meta)
	}
	return q.s.TransmitWithMetadata(descs), nil
}

// finishChainChecksum computes the checksum o asks for over the chain that
// starts at chain[0] (the field holds the pseudo-header sum, as for the
// kernel) and stores it, as the kernel's skb_checksum_help would. A chain
// cut short by the end of the call is left alone: Transmit sends only
// whole chains.
func (q *TxQueue) finishChainChecksum(chain []packetio.Desc, o packetio.Offload) {
	end := 0
	for end < len(chain) && chain[end].Options&packetio.OptContinued != 0 {
		end++
	}
	if end == len(chain) {
		return
	}
	region := q.Region()
	var s uint32
	n := 0
	for j, d := range chain[:end+1] {
		b := region.Writable(d)
		if len(b) < int(d.Len) {
			return // not a frame of this queue: Transmit refuses it
		}
		b = b[:d.Len]
		if j == 0 {
			b = b[o.CsumStart:]
		}
		s = csum.SumAfter(b, s, n)
		n += len(b)
	}
	sum := ^csum.Fold(s)
	if sum == 0 {
		sum = 0xffff // as the kernel stores a computed 0 (CSUM_MANGLED_0)
	}
	first := region.Writable(chain[0])
	binary.BigEndian.PutUint16(first[int(o.CsumStart)+int(o.CsumOff):], sum)
}

// Err is nil while the queue is healthy. When the interface went away it
// wraps packetio.ErrDeviceGone, when the transmit ring stopped moving
// packetio.ErrWedged (both wrap ErrQueueFailed and stay); it asks the
// socket (one system call), so it finds a lost device even when no other
// call ran since.
func (q *TxQueue) Err() error {
	if q.closed.Load() {
		return q.opErr("transmit", packetio.ErrClosed)
	}
	return q.opErr("transmit", errOrMisuse(q.s))
}

// Complete returns completed frames to the pool. A frame of another queue
// (a forwarded one) is refused and counted in Stats().Backend["foreign"]:
// forwarders use Reclaim.
func (q *TxQueue) Complete(max int) int {
	if q.closed.Load() {
		return 0
	}
	return q.s.Complete(max)
}

// Reclaim hands completed frames back to the caller, by the address the
// kernel completed, to Recycle to their receive queue or Free here.
func (q *TxQueue) Reclaim(max int, out []packetio.Desc) []packetio.Desc {
	if q.closed.Load() {
		return out
	}
	q.addrs = q.s.CompleteInto(max, q.addrs[:0])
	for _, a := range q.addrs {
		out = append(out, packetio.Desc{Addr: a})
	}
	return out
}

// Free returns unsent frames to the pool.
func (q *TxQueue) Free(descs []packetio.Desc) {
	if q.closed.Load() {
		return
	}
	q.s.Free(descs)
}

// NumCompleted is how many completions wait.
func (q *TxQueue) NumCompleted() int { return q.gauge(q.s.NumCompleted) }

// NumInFlight is how many transmitted frames the kernel still holds.
func (q *TxQueue) NumInFlight() int { return q.gauge(q.s.NumTransmitted) }

// NumFreeSlots is how many descriptors Transmit would take now.
func (q *TxQueue) NumFreeSlots() int { return q.gauge(q.s.NumFreeTxSlots) }

// NumFreeFrames is how many frames the pool holds.
func (q *TxQueue) NumFreeFrames() int { return q.gauge(q.s.FreeTxFrames) }

func (q *TxQueue) gauge(f func() int) int {
	if q.closed.Load() {
		return 0
	}
	return f()
}

// SendFunc completes, allocates, builds and transmits in one call.
func (q *TxQueue) SendFunc(count int, build func(i int, frame []byte) int) (int, error) {
	if q.closed.Load() {
		return 0, q.opErr("send", packetio.ErrClosed)
	}
	n, err := q.s.SendFunc(count, build)
	return n, q.opErr("send", err)
}

// Stats returns the queue's counters.
func (q *TxQueue) Stats() (packetio.TxStats, error) {
	if q.closed.Load() {
		return packetio.TxStats{}, q.opErr("tx stats", packetio.ErrClosed)
	}
	st, err := q.s.Stats()
	if err != nil {
		return packetio.TxStats{}, q.opErr("tx stats", err)
	}
	k := st.Kernel
	return packetio.TxStats{
		Packets:     st.Transmitted,
		Bytes:       st.TxBytes,
		Completed:   st.Completed,
		Batches:     st.TxBatches,
		Completions: st.CompletionBatches,
		RingFull:    st.RingFull,
		PoolEmpty:   st.PoolEmpty,
		Errors:      st.KickErrors + k.TxInvalidDescs,
		Refused:     st.TxRejected,
		Backend: map[string]uint64{
			"too_long":         st.TxTooLong,
			"link_down":        st.LinkDown,
			"wedged":           st.Wedged,
			"kicks":            st.Kicks,
			"kicks_suppressed": st.KicksSuppressed,
			"kick_retries":     st.KickRetries,
			"kick_gave_up":     st.KickGaveUp,
			"kick_busy":        st.KickBusy,
			"pool_rejected":    st.TxRejected, // the transmit side's part
			"foreign":          st.Foreign,
			"tx_invalid_descs": k.TxInvalidDescs,
			"tx_ring_empty":    k.TxRingEmpty,
			"in_flight_high":   st.InflightHigh,
		},
	}, nil
}

// Close marks the queue closed; the socket closes with the device.
func (q *TxQueue) Close() error {
	q.closed.Store(true)
	return nil
}

// RxQueue is a receive queue: the receive side of one AF_XDP socket, whose
// frames are stamped on arrival by the XDP program. It implements
// packetio.TimestampReceiver.
type RxQueue struct {
	d        *Device
	s        *xdp.Socket
	index    int
	reg      *region
	closed   atomic.Bool
	noStamps atomic.Bool // the driver could not write a stamp
}

var (
	_ packetio.RxQueue           = (*RxQueue)(nil)
	_ packetio.TimestampReceiver = (*RxQueue)(nil)
)

// opErr is the queue's error for op: a *packetio.OpError whose cause is
// err; nil for nil.
func (q *RxQueue) opErr(op string, err error) error {
	return packetio.NewOpError(op, backendName, q.d.name, q.index, err)
}

// Region is the device's frame memory.
func (q *RxQueue) Region() packetio.Region { return q.reg.of(q.s) }

// Fill posts up to n frames to the fill ring, and wakes the driver if it
// parked (one atomic load when it did not; counted in
// Stats().Backend["rx_kicks"]), so a loop that never blocks in Poll keeps
// receiving.
func (q *RxQueue) Fill(n int) int {
	if q.closed.Load() {
		return 0
	}
	k := q.s.Fill(n)
	if q.s.NeedsWakeupRx() {
		_ = q.s.WakeupRx()
	}
	return k
}

// Poll waits for packets; Close wakes it with ErrClosed.
func (q *RxQueue) Poll(timeout time.Duration) (int, error) {
	if q.closed.Load() {
		return 0, q.opErr("poll", packetio.ErrClosed)
	}
	n, err := q.s.Poll(timeout)
	if err != nil {
		if errors.Is(err, packetio.ErrClosed) {
			return 0, q.opErr("poll", packetio.ErrClosed)
		}
		return 0, q.opErr("poll", err)
	}
	return n, nil
}

// Receive returns up to max descriptors, whole packets only.
func (q *RxQueue) Receive(max int) []packetio.Desc {
	if q.closed.Load() {
		return nil
	}
	return q.s.ReceiveWhole(max)
}

// ReceiveTimestamps is Receive plus each packet's arrival stamp: the
// driver's hardware clock where it gives one, else CLOCK_MONOTONIC taken by
// the XDP program at the driver hook (Info().Timestamps says which applies;
// Stats().Backend counts each). Should a packet's stamp read zero (which
// the program never writes, so that is a fault, counted as
// "unstamped"), the queue takes no packet here, returns
// nil, nil from then on, and Capabilities().RxTimestamps turns false: the
// packets wait for Receive.
func (q *RxQueue) ReceiveTimestamps(max int) ([]packetio.Desc, []uint64) {
	if q.closed.Load() || !q.d.stamps || q.noStamps.Load() {
		return nil, nil
	}
	descs, ts, unstamped := q.s.ReceiveStamped(max)
	if unstamped {
		q.noStamps.Store(true)
		return nil, nil
	}
	return descs, ts
}

// Err is nil while the queue is healthy. When the interface went away it
// wraps packetio.ErrDeviceGone (and ErrQueueFailed) from then on; it asks
// the socket (one system call), so it finds a lost device even when no
// other call ran since.
func (q *RxQueue) Err() error {
	if q.closed.Load() {
		return q.opErr("receive", packetio.ErrClosed)
	}
	return q.opErr("receive", errOrMisuse(q.s))
}

// errOrMisuse is the socket's failure, or else the first frame it refused
// for not being the caller's (recorded only in packetio_checked builds,
// where it matches packetio.ErrNotOwned; the queue keeps working).
func errOrMisuse(s *xdp.Socket) error {
	if err := s.Err(); err != nil {
		return err
	}
	return s.Misuse()
}

// Recycle returns received frames to the pool.
func (q *RxQueue) Recycle(descs []packetio.Desc) {
	if q.closed.Load() {
		return
	}
	q.s.Recycle(descs)
}

// NumFreeFillSlots is how many frames Fill can post now.
func (q *RxQueue) NumFreeFillSlots() int { return q.gauge(q.s.NumFreeFillSlots) }

// NumReceived is how many descriptors wait on the ring (no system call).
func (q *RxQueue) NumReceived() int { return q.gauge(q.s.NumReceived) }

// NumFreeFrames is how many frames the pool holds.
func (q *RxQueue) NumFreeFrames() int { return q.gauge(q.s.FreeRxFrames) }

func (q *RxQueue) gauge(f func() int) int {
	if q.closed.Load() {
		return 0
	}
	return f()
}

// Stats returns the queue's counters, with the kernel's drops.
func (q *RxQueue) Stats() (packetio.RxStats, error) {
	if q.closed.Load() {
		return packetio.RxStats{}, q.opErr("rx stats", packetio.ErrClosed)
	}
	st, err := q.s.Stats()
	if err != nil {
		return packetio.RxStats{}, q.opErr("rx stats", err)
	}
	k := st.Kernel
	return packetio.RxStats{
		Packets:   st.Received,
		Bytes:     st.RxBytes,
		Filled:    st.Filled,
		Batches:   st.RxBatches,
		Polls:     st.Polls,
		PoolEmpty: st.FillPoolEmpty,
		Errors:    k.RxInvalidDescs,
		Dropped:   k.RxDropped + k.RxRingFull,
		Backend: map[string]uint64{
			"rx_kicks":           st.RxKicks,
			"spin_hits":          st.SpinHits,
			"spin_misses":        st.SpinMisses,
			"rx_dropped":         k.RxDropped,
			"rx_ring_full":       k.RxRingFull,
			"rx_fill_ring_empty": k.RxFillRingEmpty,
			"outstanding":        st.Filled - st.Received,
			"pool_rejected":      st.Rejected - st.TxRejected, // the receive side's part
			"stamps_device":      st.StampsDevice,
			"stamps_monotonic":   st.StampsMonotonic,
			"unstamped":          st.Unstamped,
		},
	}, nil
}

// Close marks the queue closed and wakes every Poll blocked on it with
// ErrClosed; the socket closes with the device.
func (q *RxQueue) Close() error {
	q.closed.Store(true)
	q.s.CloseRx()
	return nil
}
