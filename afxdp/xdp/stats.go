package xdp

import (
	"fmt"
	"strings"
)

// Stats are one socket's counters: cumulative since the socket opened, 64
// bits wide (they never wrap in practice), kept per batch, never per
// packet. Sample twice and subtract for a rate.
type Stats struct {
	// Filled counts frames posted to the fill ring; Received the
	// descriptors taken off the receive ring.
	Filled, Received uint64
	// RxBatches counts receive calls that returned something; RxBytes the
	// bytes they returned.
	RxBatches, RxBytes uint64
	// Transmitted counts descriptors put on the transmit ring, Completed
	// those taken back off the completion ring, TxBatches the Transmit
	// calls that queued something, TxBytes their bytes.
	Transmitted, Completed, TxBatches, TxBytes uint64
	// CompletionBatches counts completion-ring reads that took something.
	CompletionBatches uint64
	// Polls counts poll(2) calls, RxKicks receive wake-ups (WakeupRx).
	Polls, RxKicks uint64
	// SpinHits counts Polls whose spin (WithPollSpin) saw packets arrive
	// without a system call, SpinMisses spins that found nothing and went
	// on to sleep.
	SpinHits, SpinMisses uint64
	// Kicks counts transmit sendto calls (retries included),
	// KicksSuppressed the batches need-wakeup let go without one.
	Kicks, KicksSuppressed uint64
	// KickRetries counts EAGAIN answers retried; KickGaveUp kicks that
	// stopped with work left (a full completion ring, or the retry bound);
	// KickBusy EBUSY and ENOBUFS (the device queue was full); KickErrors
	// anything else.
	KickRetries, KickGaveUp, KickBusy, KickErrors uint64
	// RingFull counts transmit calls that found no room on the ring;
	// PoolEmpty allocations that found no free frame; FillPoolEmpty Fill
	// calls that had no frame to post.
	RingFull, PoolEmpty, FillPoolEmpty uint64
	// Rejected counts descriptors refused: invalid on transmit, or frames
	// given back to a pool that does not own them.
	Rejected uint64
	// TxRejected is the transmit side's part of Rejected: descriptors
	// Transmit or Free turned away (and completions no pool took).
	// TxTooLong counts those refused for being longer than the link
	// carries (MaxTxLen), SendFunc builds and SendBatch payloads included.
	TxRejected, TxTooLong uint64
	// LinkDown counts kicks the kernel answered ENETDOWN (the link was
	// down; what waits goes when it is up again); Wedged is 1 once the
	// transmit ring stopped moving and the socket failed with ErrWedged.
	LinkDown, Wedged uint64
	// Foreign counts completed frames that belong to no pool of the
	// socket and had no WithOnForeignComplete to go to.
	Foreign uint64
	// StampsDevice and StampsMonotonic count stamps by clock; Unstamped
	// packets whose stamp read zero, which the program never writes (a
	// driver's zero falls back to CLOCK_MONOTONIC): a count is a fault.
	StampsDevice, StampsMonotonic, Unstamped uint64
	// SendRequested and SendAllocated are what SendFunc was asked for and
	// what it got frames for; InflightHigh the most frames the kernel
	// held at once.
	SendRequested, SendAllocated, InflightHigh uint64
	// PinRefused counts placements the kernel refused (a cpuset that
	// excludes the CPU): the worker was left where it was.
	PinRefused uint64
	// Kernel is what the kernel counts (XDP_STATISTICS).
	Kernel KernelStats
}

// KernelStats are the socket's XDP_STATISTICS: drops and errors only the
// kernel sees.
type KernelStats struct {
	// RxDropped: packets dropped for reasons other than a full ring
	// (for example a frame too small).
	RxDropped uint64
	// RxInvalidDescs and TxInvalidDescs: descriptors the kernel refused.
	RxInvalidDescs, TxInvalidDescs uint64
	// RxRingFull: packets dropped because the receive ring was full (the
	// program reads too slowly).
	RxRingFull uint64
	// RxFillRingEmpty: times the driver found the fill ring empty (the
	// program fills too slowly).
	RxFillRingEmpty uint64
	// TxRingEmpty: times the kernel found the transmit ring empty.
	TxRingEmpty uint64
}

// PacketsPerPoll is Received divided by Polls: how many packets each receive
// system call paid for. Near 1 means a system call per packet.
func (s Stats) PacketsPerPoll() float64 {
	if s.Polls == 0 {
		return 0
	}
	return float64(s.Received) / float64(s.Polls)
}

// String is one line for a log.
func (s Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rx %d tx %d completed %d, %.1f pkt/poll, %d polls, %d kicks (%d suppressed, %d retried, %d gave up)",
		s.Received, s.Transmitted, s.Completed, s.PacketsPerPoll(), s.Polls, s.Kicks, s.KicksSuppressed, s.KickRetries, s.KickGaveUp)
	k := s.Kernel
	if k != (KernelStats{}) {
		fmt.Fprintf(&b, ", kernel: rx_dropped %d rx_ring_full %d fill_empty %d invalid rx/tx %d/%d tx_ring_empty %d",
			k.RxDropped, k.RxRingFull, k.RxFillRingEmpty, k.RxInvalidDescs, k.TxInvalidDescs, k.TxRingEmpty)
	}
	if s.Rejected+s.Foreign+s.KickErrors > 0 {
		fmt.Fprintf(&b, ", rejected %d foreign %d kick errors %d", s.Rejected, s.Foreign, s.KickErrors)
	}
	return b.String()
}

// Stats returns the socket's counters and the kernel's. Safe from any
// goroutine.
func (s *Socket) Stats() (Stats, error) {
	if !s.enter() {
		return Stats{}, s.opErr("stats", ErrClosed)
	}
	defer s.exit()
	r, t := &s.r.st, &s.t.st
	st := Stats{
		Filled: r.filled.Load(), Received: r.received.Load(), RxBatches: r.rxBatches.Load(), RxBytes: r.rxBytes.Load(),
		Polls: r.polls.Load(), RxKicks: r.rxKicks.Load(), SpinHits: r.spinHits.Load(), SpinMisses: r.spinMisses.Load(), FillPoolEmpty: r.fillPoolEmpty.Load(),
		StampsDevice: r.stampsDevice.Load(), StampsMonotonic: r.stampsMonotonic.Load(), Unstamped: r.unstamped.Load(),
		Transmitted: t.transmitted.Load(), Completed: t.completed.Load(), CompletionBatches: t.compBatches.Load(), TxBatches: t.txBatches.Load(), TxBytes: t.txBytes.Load(),
		Kicks: t.kicks.Load(), KicksSuppressed: t.kicksSuppressed.Load(),
		KickRetries: t.kickRetries.Load(), KickGaveUp: t.kickGaveUp.Load(), KickBusy: t.kickBusy.Load(), KickErrors: t.kickErrors.Load(),
		RingFull: t.ringFull.Load(), PoolEmpty: t.poolEmpty.Load(),
		Rejected: r.rejected.Load() + t.rejected.Load(), Foreign: t.foreign.Load(),
		TxRejected: t.rejected.Load(), TxTooLong: t.tooLong.Load(), LinkDown: t.linkDown.Load(), Wedged: t.wedged.Load(),
		SendRequested: t.sendReq.Load(), SendAllocated: t.sendGot.Load(), InflightHigh: t.inflightHigh.Load(), PinRefused: s.pinRefused.Load(),
	}
	k, err := kernelStatistics(s.fd)
	if err != nil {
		return st, s.opErr("stats", fmt.Errorf("XDP_STATISTICS: %w", err))
	}
	st.Kernel = KernelStats{RxDropped: k.Rx_dropped, RxInvalidDescs: k.Rx_invalid_descs, TxInvalidDescs: k.Tx_invalid_descs,
		RxRingFull: k.Rx_ring_full, RxFillRingEmpty: k.Rx_fill_ring_empty_descs, TxRingEmpty: k.Tx_ring_empty_descs}
	return st, nil
}
