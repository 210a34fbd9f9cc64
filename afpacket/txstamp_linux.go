//go:build linux

package afpacket

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
)

const (
	// stampBatch is the most error-queue messages one recvmmsg reads.
	stampBatch = 64
	// stampCtlLen is the control buffer of one message: the
	// SO_TIMESTAMPING and PACKET_TX_TIMESTAMP cmsgs (64 + 32 bytes) with
	// room to spare.
	stampCtlLen = 128
	// txStampFlags asks for software departure stamps numbered by the
	// socket (OPT_ID), reported without the packet (OPT_TSONLY).
	txStampFlags = unix.SOF_TIMESTAMPING_TX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE |
		unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY
)

// txStamper reads one transmit socket's departure stamps. It exists only
// on a queue opened WithTxTimestamps; all its buffers are made once.
type txStamper struct {
	msgs []unix.Mmsghdr
	ctl  []byte // stampCtlLen per message
	next uint64 // the sequence number expected next
	// stamps and gaps are read by Stats from any goroutine.
	stamps, gaps, errs atomic.Uint64
}

// enableTxStamps turns on SO_TIMESTAMPING on the queue's socket. The OPT_ID
// counter starts at 0 here, before the first packet.
func (q *TxQueue) enableTxStamps() error {
	if err := unix.SetsockoptInt(q.fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, txStampFlags); err != nil {
		return err
	}
	s := &txStamper{msgs: make([]unix.Mmsghdr, stampBatch), ctl: make([]byte, stampBatch*stampCtlLen)}
	q.stamper = s
	return nil
}

// TxTimestamps appends to out the departure stamps the kernel queued since
// the last call, each numbered by packetio.TxStamp.Seq: the count of
// packets this queue handed to the kernel before it (a packet the kernel
// refused, counted in TxStats.Errors, takes no number). Time is
// CLOCK_REALTIME nanoseconds, taken when the driver took the packet. It
// reads at most cap(out)-len(out) stamps (a batch of 64 when out is full),
// one recvmmsg(2) per 64, and does not allocate when out has room. Without
// WithTxTimestamps, or on a closed queue, it returns out unchanged.
func (q *TxQueue) TxTimestamps(out []packetio.TxStamp) []packetio.TxStamp {
	s := q.stamper
	if s == nil || !q.calls.Enter(&q.closed) {
		return out
	}
	defer q.calls.Exit()
	want := cap(out) - len(out)
	if want <= 0 {
		want = stampBatch
	}
	var got, gaps uint64
	for want > 0 {
		n := min(want, stampBatch)
		for i := range n {
			h := &s.msgs[i].Hdr
			h.Control = &s.ctl[i*stampCtlLen]
			h.SetControllen(stampCtlLen)
			h.Flags = 0
		}
		k, errno := recvErrqueue(q.fd, s.msgs[:n])
		if k <= 0 {
			if errno != 0 && errno != unix.EAGAIN && errno != unix.EINTR {
				s.errs.Add(1)
			}
			break
		}
		for i := range k {
			h := &s.msgs[i].Hdr
			l := min(int(h.Controllen), stampCtlLen)
			key, ns, ok := parseTxStamp(s.ctl[i*stampCtlLen : i*stampCtlLen+l])
			if !ok {
				continue
			}
			seq := widen(key, s.next)
			if seq >= s.next {
				gaps += seq - s.next
				s.next = seq + 1
			}
			out = append(out, packetio.TxStamp{Seq: seq, Time: ns})
			got++
		}
		want -= k
		if k < n {
			break
		}
	}
	if got != 0 {
		s.stamps.Add(got)
	}
	if gaps != 0 {
		s.gaps.Add(gaps)
	}
	return out
}
