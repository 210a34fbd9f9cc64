// Package waitset lets one goroutine wait on many packetio queues at once,
// of one device or several, of one backend or mixed, and learn which have
// work.
//
//	s, err := waitset.New()
//	s.AddRx(dev1.RxQueue(0), 0)
//	s.AddRx(dev2.RxQueue(0), 1)
//	for {
//		evs, err := s.Wait(-1)
//		if err != nil {
//			return err // the set was closed
//		}
//		for _, ev := range evs {
//			if ev.Err != nil {
//				continue // the queue closed or failed; it left the set
//			}
//			descs := ev.Rx.Receive(256) // ... until it returns nothing
//		}
//	}
//
// # How it waits
//
// A receive queue that implements packetio.ReadyNotifier
// (Capabilities().ReadyFD: afpacket and afxdp) is waited on with epoll,
// level-triggered, so an idle Wait sleeps in the kernel and uses no CPU.
// Before each sleep Wait calls the queue's Arm, which finds work already
// waiting and wakes an afxdp driver parked by need-wakeup. Each such queue
// costs the set two descriptors: an inner epoll holding the queue's ready
// descriptor, so the set never names a descriptor the device may have
// closed, and a duplicate of the queue's close eventfd, so a Close is seen
// even when the device closes its own descriptors before Wait runs.
//
// Every other queue (dpdk, mlx5 and pipe receive queues, and every transmit
// queue, reported when NumCompleted is above 0) is polled: Wait looks at
// NumReceived or NumCompleted, one or two atomic loads, and sleeps at most
// WithPollInterval (1 ms by default) between two looks while the set holds
// one. That bounds the wake-up latency of a polled queue by the interval
// (plus the kernel's timer slack, about 50 µs) and costs about a thousand
// wake-ups a second while idle; an epoll queue in the same set still wakes
// Wait at once. Err is read every 10 ms, the bound on how late a polled
// queue's Close is reported. Measured figures are in README.md.
//
// # Ends
//
// A queue that is closed (or whose device is closed) while the set holds it
// is reported once, with Err wrapping packetio.ErrClosed (or
// packetio.ErrQueueFailed when it failed), and leaves the set; Wait never
// hangs on it. Close of the set wakes a Wait in progress, which returns an
// error wrapping packetio.ErrClosed.
//
// Wait allocates nothing: it returns a slice it reuses (only the error of a
// queue that ended is allocated). The set is driven by one goroutine, and a
// queue's own rule still holds: the goroutine that waits on a queue is the
// one that drives it.
package waitset
