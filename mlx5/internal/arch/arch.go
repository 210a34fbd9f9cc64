//go:build amd64 || arm64

package arch

// PublishDoorbell makes a batch of send WQEs visible to the device: it stores
// dbval (the producer index, already in big-endian byte order) into the send
// doorbell record *dbrec, then writes ctrl (the first 8 bytes of the last WQE
// of the batch, as they lie in memory) to the UAR doorbell register *uar.
// Every WQE store made before the call is ordered before both.
//
//go:noescape
func PublishDoorbell(dbrec *uint32, dbval uint32, uar *uint64, ctrl uint64)

// PublishDbrec stores v (big-endian bytes) into a receive doorbell record,
// after every earlier store (the receive WQEs it publishes).
//
//go:noescape
func PublishDbrec(dbrec *uint32, v uint32)

// ReleaseCQ stores v (big-endian bytes) into a CQ doorbell record, telling
// the device it may reuse every entry before the consumer index, after every
// earlier load of those entries.
//
//go:noescape
func ReleaseCQ(dbrec *uint32, v uint32)

// LoadCQEHeader loads the last four bytes of a CQE (wqe_counter, signature,
// op_own) as a big-endian word, and orders every later load after it, so a
// CQE body read after a successful owner test is the device's, not stale.
//
//go:noescape
func LoadCQEHeader(p *byte) uint32

// LoadCQEHeaderRaw is LoadCQEHeader without the fence, for counting ready
// entries only.
//
//go:noescape
func LoadCQEHeaderRaw(p *byte) uint32

// Prefetch hints that the cache line at p will be read soon.
//
//go:noescape
func Prefetch(p *byte)
