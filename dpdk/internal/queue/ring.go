package queue

// Ring is a single-producer single-consumer ring of mbuf addresses shared
// with the driver. It takes no atomics: the Go side and the driver touch it
// only on the queue's own thread (the driver inside a burst call), so every
// access is ordered by that thread. head is the consumer's index, tail the
// producer's; both run free and wrap.
//
// The rings of a real device live in C memory (the eal package builds them
// with NewRingOver); tests build them in Go memory with NewRing.
type Ring struct {
	buf  []uint64
	mask uint32
	head *uint32
	tail *uint32
}

// NewRing returns an empty ring of size entries, a power of two.
func NewRing(size int) *Ring {
	if size <= 0 || size&(size-1) != 0 {
		return nil
	}
	var idx [2]uint32
	return &Ring{buf: make([]uint64, size), mask: uint32(size - 1), head: &idx[0], tail: &idx[1]}
}

// RingSize is the smallest power of two of at least n: the size of a ring
// that holds n entries.
func RingSize(n int) int {
	ring := 1
	for ring < n {
		ring <<= 1
	}
	return ring
}

// NewRingOver wraps memory someone else owns: buf of a power-of-two length
// and the two indices. It returns nil for a length that is not a power of
// two.
func NewRingOver(buf []uint64, head, tail *uint32) *Ring {
	n := len(buf)
	if n == 0 || n&(n-1) != 0 || head == nil || tail == nil {
		return nil
	}
	return &Ring{buf: buf, mask: uint32(n - 1), head: head, tail: tail}
}

// Len is the number of entries waiting.
func (r *Ring) Len() int { return int(*r.tail - *r.head) }

// Cap is the ring's size.
func (r *Ring) Cap() int { return len(r.buf) }

// Room is how many more entries Push would take. It is never negative,
// even if a driver has broken the ring's indices.
func (r *Ring) Room() int { return max(len(r.buf)-r.Len(), 0) }

// Push appends a prefix of vals, as much as fits, and returns its length.
func (r *Ring) Push(vals []uint64) int {
	n := min(len(vals), r.Room())
	t := *r.tail
	for i := 0; i < n; i++ {
		r.buf[(t+uint32(i))&r.mask] = vals[i]
	}
	*r.tail = t + uint32(n)
	return n
}

// PushOne appends v and reports whether there was room.
func (r *Ring) PushOne(v uint64) bool {
	if r.Room() == 0 {
		return false
	}
	r.buf[*r.tail&r.mask] = v
	*r.tail++
	return true
}

// Pop appends up to n entries to dst, oldest first.
func (r *Ring) Pop(n int, dst []uint64) []uint64 {
	n = min(n, r.Len())
	h := *r.head
	for i := 0; i < n; i++ {
		dst = append(dst, r.buf[(h+uint32(i))&r.mask])
	}
	*r.head = h + uint32(max(n, 0))
	return dst
}

// Unpush takes back up to n of the newest entries, appending them to dst
// newest first: the producer undoing its own pushes. Like every access it
// runs on the queue's own thread, so the driver is not inside the ring.
func (r *Ring) Unpush(n int, dst []uint64) []uint64 {
	n = min(n, r.Len())
	t := *r.tail
	for i := 1; i <= n; i++ {
		dst = append(dst, r.buf[(t-uint32(i))&r.mask])
	}
	*r.tail = t - uint32(max(n, 0))
	return dst
}

// PopBulk fills all of dst or takes nothing, as rte_mempool_get_bulk does,
// and reports which.
func (r *Ring) PopBulk(dst []uint64) bool {
	if len(dst) > r.Len() {
		return false
	}
	h := *r.head
	for i := range dst {
		dst[i] = r.buf[(h+uint32(i))&r.mask]
	}
	*r.head = h + uint32(len(dst))
	return true
}

// Reset empties the ring.
func (r *Ring) Reset() { *r.head = *r.tail }
