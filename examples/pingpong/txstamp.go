package main

import (
	"encoding/binary"
	"strings"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afpacket"
	"github.com/packetio/packetio/examples/internal/stamp"
	"github.com/packetio/packetio/internal/spinwait"
)

// One-way latency takes two stamps on one clock: the departure stamp of the
// ping at the measuring end (packetio.TimestampTransmitter) and the arrival
// stamp at the reflector, which the reflector writes into the frame behind
// the sequence number: 8 bytes of stamp and a byte naming its clock
// (stampTag), so a reflector in another process or on another host can say
// it too. Across hosts the two clocks are only as close as PTP or NTP keeps
// them.
const (
	stampOff   = 4  // from the sequence number
	stampBytes = 9  // stamp + clock tag
	tagNone    = 0  // no arrival stamp written
	tagReal    = 1  // CLOCK_REALTIME
	tagMono    = 2  // CLOCK_MONOTONIC
	txStampCap = 64 // departure stamps read per call
)

// txClock names the clock of the measuring end's departure stamps: afpacket
// WithTxTimestamps stamps with CLOCK_REALTIME as the driver takes the frame.
const txClock = "CLOCK_REALTIME as the driver took the frame (SO_TIMESTAMPING)"

// stampTag is the tag of a receive clock, tagNone when no program can
// compare it.
func stampTag(c stamp.Clock) byte {
	switch {
	case !c.Comparable():
		return tagNone
	case strings.HasPrefix(c.Name, "CLOCK_REALTIME"):
		return tagReal
	case strings.HasPrefix(c.Name, "CLOCK_MONOTONIC"):
		return tagMono
	}
	return tagNone
}

// openMeasuring opens the measuring end on backend b: afpacket with
// WithTxTimestamps, so pings carry departure stamps, and as backend.Open
// opens it otherwise. It returns the open function and, for afpacket, the
// departure stamps' clock ("" when there are none).
func (c config) openMeasuring(b string) (func(string) (packetio.Device, error), string) {
	if b != "afpacket" {
		return c.open(b), ""
	}
	cfg := c.deviceConfig(b)
	return func(name string) (packetio.Device, error) {
		opts := []afpacket.Option{afpacket.WithTxQueues(cfg.TxQueues), afpacket.WithRxQueues(cfg.RxQueues), afpacket.WithTxTimestamps()}
		if cfg.LowLatency {
			opts = append(opts, afpacket.WithLowLatency())
		}
		return afpacket.Open(name, opts...)
	}, txClock
}

// writeStamp puts the reflector's arrival stamp and its clock's tag behind
// the sequence number of a pingpong frame, where the frame has room.
func writeStamp(f []byte, seqOff int, ts uint64, tag byte) {
	at := seqOff + stampOff
	if tag == tagNone || len(f) < at+stampBytes {
		return
	}
	binary.BigEndian.PutUint64(f[at:], ts)
	f[at+8] = tag
}

// readStamp returns the arrival stamp a reflector wrote into f, 0 when it
// wrote none on CLOCK_REALTIME.
func readStamp(f []byte, seqOff int) uint64 {
	at := seqOff + stampOff
	if len(f) < at+stampBytes || f[at+8] != tagReal {
		return 0
	}
	return binary.BigEndian.Uint64(f[at:])
}

// departure finds the departure stamp of packet seq among what tx has
// queued, reading into buf; 0 when it has none.
func departure(tx packetio.TimestampTransmitter, buf []packetio.TxStamp, seq uint64) (uint64, []packetio.TxStamp) {
	for range 3 {
		buf = tx.TxTimestamps(buf[:0])
		for _, s := range buf {
			if s.Seq == seq {
				return s.Time, buf
			}
		}
		if len(buf) == 0 {
			spinwait.Sleep(10 * time.Microsecond)
		}
	}
	return 0, buf
}

// oneWayLine says what the one-way figure uses, for the first line.
func oneWayLine(txc string, reflectorTag byte, own bool) string {
	switch {
	case txc == "":
		return "one-way: not measured (no departure stamps on this backend)"
	case own && reflectorTag != tagReal:
		return "one-way: not measured (the reflector's arrival stamps are not on CLOCK_REALTIME)"
	case own:
		return "one-way: departure stamps at this end (" + txc + ") to the reflector's arrival stamps (CLOCK_REALTIME)"
	}
	return "one-way: departure stamps at this end (" + txc + ") to the arrival stamps a pingpong reflector writes in, if on CLOCK_REALTIME (hosts' clocks as synchronised as they are)"
}
