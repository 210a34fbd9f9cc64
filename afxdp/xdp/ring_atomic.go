package xdp

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The four AF_XDP rings are single-producer single-consumer queues in
// memory shared with the kernel. Each has free-running 32-bit producer and
// consumer indices; the slot of index i is i & mask. We produce on the fill
// and transmit rings and consume on the receive and completion rings.
//
// The kernel side is net/xdp/xsk_queue.h. Its protocol, in its own
// letters:
//
//	producer (us on fill/tx, the kernel on rx/comp):
//	    if (LOAD ->consumer) {              (A)
//	        STORE $data
//	        smp_wmb()                       (B)
//	        STORE ->producer
//	    }
//	consumer (the kernel on fill/tx, us on rx/comp):
//	    if (LOAD ->producer) {              (C)
//	        smp_rmb()
//	        LOAD $data
//	        smp_mb()                        (D)
//	        STORE ->consumer
//	    }
//
// Go's sync/atomic loads and stores are sequentially consistent, which is
// at least the acquire and release each step needs: every producer-index
// store below is the release (B) that publishes the entries written before
// it, every producer-index load the acquire (C) that makes them visible,
// and every consumer-index store the barrier (D) that gives the slots back
// only after we are done reading them. On amd64 these are plain moves (and
// one xchg); on arm64 LDAR and STLR. Plain loads and stores would be a real
// bug on arm64.
//
// Both sides keep cached copies of the other side's index and refresh them
// only when the cached view runs out, so a batch costs one shared-line
// access per ring, not one per entry, and every index is published once per
// batch.

// ringShared is what one ring's mapping holds.
type ringShared struct {
	producer *atomic.Uint32
	consumer *atomic.Uint32
	flags    *atomic.Uint32 // XDP_RING_NEED_WAKEUP; nil on kernels without it
	mask     uint32
	size     uint32
}

// needsWakeup reports whether the kernel side of the ring parked and asks
// for a system call to wake it.
func (r *ringShared) needsWakeup() bool {
	// A plain flag read: the kernel sets and clears it with WRITE_ONCE
	// (xsk_set_rx_need_wakeup, xsk_set_tx_need_wakeup); a stale value
	// costs one extra or one late wake-up, never a lost packet, because
	// the kernel re-checks the rings after setting it.
	return r.flags != nil && r.flags.Load()&unix.XDP_RING_NEED_WAKEUP != 0
}

// prodRing is a ring we produce on: fill (addresses) or tx (descriptors).
type prodRing[T any] struct {
	ringShared
	ents       []T
	cachedProd uint32 // our producer index, published by submit
	cachedCons uint32 // the kernel's consumer index plus size, refreshed lazily
}

func (r *prodRing[T]) init(s ringShared, ents []T) {
	r.ringShared, r.ents = s, ents
	r.cachedProd = s.producer.Load()
	r.cachedCons = s.consumer.Load() + s.size
}

// free returns how many entries can be produced now, refreshing the
// kernel's consumer index only when the cached one does not cover want.
func (r *prodRing[T]) free(want uint32) uint32 {
	if n := r.cachedCons - r.cachedProd; n >= want {
		return n
	}
	// Acquire (A/C): pairs with the kernel consumer's store of ->consumer
	// after (D) in xskq_cons_release: the slots it reports free were
	// read and may be overwritten.
	r.cachedCons = r.consumer.Load() + r.size
	n := r.cachedCons - r.cachedProd
	if n > r.size { // a kernel index we do not believe: produce nothing
		return 0
	}
	return n
}

// put writes entry i of the current batch. The caller checked free.
func (r *prodRing[T]) put(i uint32, v T) { r.ents[(r.cachedProd+i)&r.mask] = v }

// submit publishes n written entries.
func (r *prodRing[T]) submit(n uint32) {
	r.cachedProd += n
	// Release (B): pairs with the kernel consumer's smp_load_acquire of
	// ->producer in __xskq_cons_peek: it sees every entry written above.
	r.producer.Store(r.cachedProd)
}

// outstanding is how many published entries the kernel has not consumed.
func (r *prodRing[T]) outstanding() uint32 {
	// Acquire (C) of ->consumer, as in free.
	n := r.cachedProd - r.consumer.Load()
	if n > r.size {
		return r.size
	}
	return n
}

// consRing is a ring we consume from: rx (descriptors) or completion
// (addresses).
type consRing[T any] struct {
	ringShared
	ents       []T
	cachedProd uint32 // the kernel's producer index, refreshed lazily
	cachedCons uint32 // our consumer index, published by release
}

func (r *consRing[T]) init(s ringShared, ents []T) {
	r.ringShared, r.ents = s, ents
	r.cachedCons = s.consumer.Load()
	r.cachedProd = s.producer.Load()
}

// avail returns how many entries up to want can be consumed now.
func (r *consRing[T]) avail(want uint32) uint32 {
	n := r.cachedProd - r.cachedCons
	if n < want {
		// Acquire (C): pairs with the kernel producer's
		// smp_store_release of ->producer in __xskq_prod_submit: the
		// entries below it are written.
		r.cachedProd = r.producer.Load()
		n = r.cachedProd - r.cachedCons
		if n > r.size { // a kernel index we do not believe: consume nothing
			r.cachedProd = r.cachedCons
			return 0
		}
	}
	return min(n, want)
}

// get reads entry i of the current batch. The caller checked avail.
func (r *consRing[T]) get(i uint32) T { return r.ents[(r.cachedCons+i)&r.mask] }

// release gives n consumed entries back to the kernel.
func (r *consRing[T]) release(n uint32) {
	r.cachedCons += n
	// Release (D): pairs with the kernel producer's READ_ONCE of
	// ->consumer in xskq_prod_is_full/xskq_prod_nb_free and the control
	// dependency after it (A): it overwrites these slots only after it
	// sees this store, which comes after our reads of them.
	r.consumer.Store(r.cachedCons)
}

// ready is how many entries wait, without consuming them.
func (r *consRing[T]) ready() uint32 {
	// Acquire (C), as in avail.
	n := r.producer.Load() - r.cachedCons
	if n > r.size {
		return 0
	}
	return n
}
