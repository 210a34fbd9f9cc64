package packetiotest

import "time"

// DevicePeer is a Peer made of a packetio device at the far end of the
// link (the other end of a pipe, a second port of a model card), driven
// from whichever goroutine calls Send or Received, one at a time. Its
// receive queues are filled at once, so frames that come before the first
// Received are kept.
func DevicePeer(d Device) Peer {
	for i := range d.NumRxQueues() {
		rx := d.RxQueue(i)
		rx.Fill(rx.NumFreeFillSlots())
	}
	return &devicePeer{d: d}
}

type devicePeer struct{ d Device }

// Send sends n test frames numbered from first on the peer's queue 0.
func (p *devicePeer) Send(first uint32, n int) int {
	tx := p.d.TxQueue(0)
	tx.Complete(1 << 16)
	sent, _ := tx.SendFunc(n, func(i int, frame []byte) int {
		return testFrame(frame, first+uint32(i), frameLen)
	})
	return sent
}

// Received returns the sequence numbers of the test frames that arrived on
// any of the peer's receive queues.
func (p *devicePeer) Received() []uint32 {
	var seqs []uint32
	for i := range p.d.NumRxQueues() {
		rx := p.d.RxQueue(i)
		rx.Fill(rx.NumFreeFillSlots())
		if n, err := rx.Poll(time.Millisecond); n == 0 || err != nil {
			continue
		}
		descs := rx.Receive(1 << 10)
		r := rx.Region()
		for _, d := range descs {
			if seq, ours, _ := parseTestFrame(r.Frame(d)); ours {
				seqs = append(seqs, seq)
			}
		}
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
	}
	return seqs
}
