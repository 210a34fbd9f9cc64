package mocknic

import (
	"encoding/binary"
	"fmt"

	"github.com/packetio/packetio/mlx5/internal/wqe"
)

// readRecord returns the index a doorbell record holds, as the device reads
// it: the record's bytes in big-endian order.
func readRecord(rec *uint32) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], *rec)
	return binary.BigEndian.Uint32(b[:])
}

// cqWriter writes completions into a CQ the way the device does: owner bit
// by lap parity, never overrunning entries software has not released.
type cqWriter struct {
	cq    []byte
	mask  uint32
	log   uint
	dbrec *uint32
	pi    uint32 // next entry to write
	cons  uint32 // software's consumer index, extended from 24 bits
}

func newCQWriter(cq []byte, dbrec *uint32) (cqWriter, error) {
	n := len(cq) / wqe.CQESize
	if n < 2 || n&(n-1) != 0 || len(cq)%wqe.CQESize != 0 {
		return cqWriter{}, fmt.Errorf("mocknic: CQ of %d bytes is not a power-of-two number of entries", len(cq))
	}
	w := cqWriter{cq: cq, mask: uint32(n - 1), dbrec: dbrec}
	for n > 1 {
		n >>= 1
		w.log++
	}
	wqe.InitCQ(cq)
	return w, nil
}

// write appends c with the right owner parity. It reports an overrun (and
// writes nothing) when software has not released the entry a lap back.
func (w *cqWriter) write(c wqe.CQE) error {
	raw := readRecord(w.dbrec)
	if raw > wqe.CQIndexMask {
		return fmt.Errorf("CQ doorbell record %#08x is not a 24-bit consumer index; is it byte-swapped?", raw)
	}
	// Extend the 24-bit consumer index to the full counter near pi.
	cons := w.pi - (w.pi-raw)&wqe.CQIndexMask
	if cons-w.cons > w.pi-w.cons {
		return fmt.Errorf("CQ consumer index %d moved backwards from %d or past the producer %d", raw, w.cons&wqe.CQIndexMask, w.pi&wqe.CQIndexMask)
	}
	w.cons = cons
	if w.pi-w.cons > w.mask {
		return fmt.Errorf("CQ overrun: %d entries unreleased in a CQ of %d", w.pi-w.cons, w.mask+1)
	}
	c.Owner = uint8(w.pi>>w.log) & 1
	c.Encode(w.cq[(w.pi&w.mask)*wqe.CQESize:])
	w.pi++
	return nil
}

// Packet is one packet the model sent.
type Packet struct {
	Bytes   []byte // the whole packet as the wire would see it
	Addr    uint64 // device address of the first byte read from memory, 0 if all inline
	Block   uint32 // the entry's first block
	Inlined int    // bytes taken from the entry itself
}
