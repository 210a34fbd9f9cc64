package ring

import (
	"github.com/packetio/packetio/mlx5/internal/arch"
	"github.com/packetio/packetio/mlx5/internal/wqe"
)

// Every access to memory the device also reads or writes, other than the
// bodies of work-queue entries and CQEs, is in this file.

// dbWord is the word to store in a doorbell record for index v: v's
// big-endian bytes, which is what the device reads. The swapDoorbell fault
// stores v as is, the byte-order bug the model must catch.
func (f *faults) dbWord(v uint32) uint32 {
	if f.swapDoorbell {
		return v
	}
	return arch.BigEndianWord(v)
}

// ringSQ publishes the send producer index pi (in blocks) and rings the UAR
// doorbell with the first 8 bytes of the last entry written, at block last.
// Device side: the record tells it how far it may read the SQ; the UAR write
// wakes it to fetch from the entry the 8 bytes name.
func (t *Tx) ringSQ(last uint32) {
	ctrl := arch.NativeWord64(t.sq.Octoword(last, 0))
	arch.PublishDoorbell(t.sqDbrec, t.fault.dbWord(t.pi&wqe.SQIndexMask), t.uar, ctrl)
}

// releaseCQ tells the device it may overwrite every CQE before consumer
// index ci. Device side: it checks this record before writing a CQE, and
// raises a CQ overrun (and kills the queue) if software is a full lap
// behind.
func releaseCQ(dbrec *uint32, f *faults, ci uint32) {
	arch.ReleaseCQ(dbrec, f.dbWord(ci&wqe.CQIndexMask))
}

// cqeHeader loads the ownership word of the CQE at consumer index ci, with
// the acquire fence that makes the body readable once the owner test passes.
// Device side: it writes the body first and the op_own byte last.
func cqeHeader(cq []byte, ci uint32, mask uint32) uint32 {
	return arch.LoadCQEHeader(&cq[(ci&mask)*wqe.CQESize+wqe.CQEHeader])
}

// cqeHeaderRaw is cqeHeader without the fence, for counting only.
func cqeHeaderRaw(cq []byte, ci uint32, mask uint32) uint32 {
	return arch.LoadCQEHeaderRaw(&cq[(ci&mask)*wqe.CQESize+wqe.CQEHeader])
}

// publishRQ publishes the receive producer index pi (WQEs posted, 16 bits).
// Device side: it may scatter into every WQE before pi.
func (r *Rx) publishRQ() {
	arch.PublishDbrec(r.rqDbrec, r.fault.dbWord(r.pi&wqe.RQIndexMask))
}
