package pipe_test

import (
	"encoding/binary"
	"testing"

	"github.com/packetio/packetio/internal/pool"
	"github.com/packetio/packetio/packetiotest"
	"github.com/packetio/packetio/pipe"
)

// FuzzDescSequence turns the input into a sequence of frame moves, legal
// and not, on one pipe: no panic, every misuse refused and counted, every
// frame accounted for at the end of each input.
func FuzzDescSequence(f *testing.F) {
	f.Add([]byte{0, 1, 0, 40, 1, 0, 90, 0, 0})
	f.Add([]byte{145, 3, 0, 170, 3, 0, 190, 3, 0, 215, 3, 0, 250, 0, 0, 145, 8, 0, 236, 0, 0})
	f.Add([]byte{10, 7, 0, 60, 7, 0, 245, 1, 0, 244, 2, 0, 130, 7, 0, 237, 0, 0})
	a, b, err := pipe.New(pipe.WithFrames(64), pipe.WithRingSize(16))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { a.Close(); b.Close() })
	f.Fuzz(func(t *testing.T, ops []byte) {
		w := packetiotest.NewOwnership(t, a, b, pool.Checked())
		for len(ops) >= 3 {
			w.Step(uint32(ops[0]) | uint32(binary.LittleEndian.Uint16(ops[1:]))<<8)
			ops = ops[3:]
		}
		w.Drain()
	})
}
