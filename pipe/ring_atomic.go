package pipe

import "sync/atomic"

// spsc is a single-producer, single-consumer ring of T, the in-memory
// counterpart of an AF_XDP ring: one goroutine produces, one consumes, and
// the two meet only through the two indices. Each side keeps a cached copy of
// the other side's index and reloads it only when the cache says the ring is
// full (producer) or empty (consumer), so most batches touch one shared cache
// line.
type spsc[T any] struct {
	slots []T
	mask  uint32

	// prod is written by the producer only (store-release after the slots
	// are written) and read by the consumer (load-acquire before the slots
	// are read).
	prod atomic.Uint32
	// cons is written by the consumer only (store-release after the slots
	// are read) and read by the producer (load-acquire before slots are
	// reused).
	cons atomic.Uint32

	prodLocal, consCached uint32 // producer side
	consLocal, prodCached uint32 // consumer side
}

func newSPSC[T any](size int) *spsc[T] {
	return &spsc[T]{slots: make([]T, size), mask: uint32(size - 1)}
}

// free is how many slots the producer may fill now.
func (r *spsc[T]) free() int {
	n := uint32(len(r.slots)) - (r.prodLocal - r.consCached)
	if n == 0 {
		// Pairs with the consumer's store of cons in release.
		r.consCached = r.cons.Load()
		n = uint32(len(r.slots)) - (r.prodLocal - r.consCached)
	}
	return int(n)
}

// push appends v; the caller checked free. Nothing is visible to the
// consumer until publish.
func (r *spsc[T]) push(v T) {
	r.slots[r.prodLocal&r.mask] = v
	r.prodLocal++
}

// publish makes every pushed slot visible to the consumer.
func (r *spsc[T]) publish() {
	// Pairs with the consumer's load of prod in ready.
	r.prod.Store(r.prodLocal)
}

// ready is how many slots the consumer may take now.
func (r *spsc[T]) ready() int {
	n := r.prodCached - r.consLocal
	if n == 0 {
		// Pairs with the producer's store of prod in publish.
		r.prodCached = r.prod.Load()
		n = r.prodCached - r.consLocal
	}
	return int(n)
}

// take consumes the next slot; the caller checked ready. The producer may
// not reuse it until release.
func (r *spsc[T]) take() T {
	v := r.slots[r.consLocal&r.mask]
	r.consLocal++
	return v
}

// release hands every taken slot back to the producer.
func (r *spsc[T]) release() {
	// Pairs with the producer's load of cons in free.
	r.cons.Store(r.consLocal)
}
