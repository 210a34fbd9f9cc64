//go:build linux

package afpacket

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
)

// testSrcMAC marks frames a test sent, so stray kernel traffic is ignored.
var testSrcMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}

const testEtherType = layers.EthernetType(0x88b5) // IEEE local experimental

// openIn opens a Device on h's link inside h's namespace.
func openIn(t testing.TB, h *netns.Host, opts ...Option) *Device {
	t.Helper()
	var d *Device
	err := h.Do(func() error {
		var err error
		d, err = Open(h.Link, opts...)
		return err
	})
	if err != nil {
		t.Fatalf("Open(%s): %v", h.Link, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// testFrame builds an Ethernet frame of exactly size bytes (>= 14+4) whose
// payload starts with seq, serialized by gopacket.
func testFrame(t testing.TB, dst net.HardwareAddr, seq uint32, size int) []byte {
	t.Helper()
	payload := make([]byte, size-14)
	binary.BigEndian.PutUint32(payload, seq)
	for i := 4; i < len(payload); i++ {
		payload[i] = byte(i + int(seq))
	}
	buf := gopacket.NewSerializeBuffer()
	eth := &layers.Ethernet{SrcMAC: testSrcMAC, DstMAC: dst, EthernetType: testEtherType}
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, eth, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ours reports whether a received frame is one a test sent.
func ours(f []byte) bool {
	return len(f) >= 14 && bytes.Equal(f[6:12], testSrcMAC) && binary.BigEndian.Uint16(f[12:]) == uint16(testEtherType)
}

// sendFrames transmits frames on tx and completes them, retrying on
// back-pressure for up to a few seconds.
func sendFrames(t testing.TB, tx packetio.TxQueue, frames [][]byte) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < len(frames); {
		if time.Now().After(deadline) {
			t.Fatalf("sent only %d of %d frames", i, len(frames))
		}
		tx.Complete(1 << 20)
		n, err := tx.SendFunc(len(frames)-i, func(j int, f []byte) int { return copy(f, frames[i+j]) })
		if err != nil {
			t.Fatalf("SendFunc: %v", err)
		}
		i += n
		if n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	tx.Complete(1 << 20)
}

// receiveOurs collects up to want of our frames from rx within timeout,
// copying them out and recycling the frames.
func receiveOurs(t testing.TB, rx packetio.RxQueue, want int, timeout time.Duration) [][]byte {
	t.Helper()
	var got [][]byte
	deadline := time.Now().Add(timeout)
	for len(got) < want && time.Now().Before(deadline) {
		rx.Fill(rx.NumFreeFillSlots())
		if _, err := rx.Poll(50 * time.Millisecond); err != nil {
			t.Fatalf("Poll: %v", err)
		}
		descs := rx.Receive(256)
		for _, d := range descs {
			if f := rx.Region().Frame(d); ours(f) {
				got = append(got, append([]byte(nil), f...))
			}
		}
		rx.Recycle(descs)
	}
	return got
}
