//go:build linux && cgo && mlx5 && (amd64 || arm64)

package mlx5

import (
	"errors"
	"strings"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/fuzzopt"
)

// fuzzOptions decodes b into an interface name and a list of options: each
// option is a kind byte and, for the counted ones, a signed 32-bit value.
func fuzzOptions(b []byte) (string, []Option) {
	in := fuzzopt.New(b)
	name := in.Name("mlx5-port0")
	var opts []Option
	for in.More() && len(opts) < 16 {
		kind, v := in.Kind(16), in.Int32()
		switch kind {
		case 0:
			opts = append(opts, WithQueues(v))
		case 1:
			opts = append(opts, WithTxQueues(v))
		case 2:
			opts = append(opts, WithRxQueues(v))
		case 3:
			opts = append(opts, WithFrames(v))
		case 4:
			opts = append(opts, WithFrameSize(v))
		case 5:
			opts = append(opts, WithTxDepth(v))
		case 6:
			opts = append(opts, WithRxDepth(v))
		case 7:
			opts = append(opts, WithRingsPerQueue(v))
		case 8:
			opts = append(opts, WithAffinity(v, v>>8))
		case 9:
			opts = append(opts, WithoutAffinity())
		case 10:
			opts = append(opts, WithMultiPacket())
		case 11:
			opts = append(opts, WithoutMultiPacket())
		case 12:
			opts = append(opts, WithChecksumOffload())
		case 13:
			opts = append(opts, nil)
		case 14:
			opts = append(opts, WithSteering(packetio.SteeringFilter{Promiscuous: v&1 != 0}))
		case 15:
			opts = append(opts, WithNUMANode(v))
		}
	}
	return name, opts
}

// FuzzValidate checks option combinations without looking at any hardware:
// validate never panics; a refusal wraps ErrInvalid (ErrUnsupported for
// steering) and names an option, an option's position or the interface; an
// accepted configuration is in range.
func FuzzValidate(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 4, 0, 0, 0})
	f.Add([]byte{0x85, 'a', '/', 'b', 'c', 'd', 3, 0, 0, 0, 0x40})
	f.Add([]byte{0, 13})
	f.Add([]byte{0, 14, 1, 0, 0, 0, 2, 1, 0, 0, 0})
	f.Add([]byte{0, 15, 0xfe, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		name, opts := fuzzOptions(b)
		c, err := validate(name, opts)
		if err != nil {
			if !errors.Is(err, packetio.ErrInvalid) && !errors.Is(err, packetio.ErrUnsupported) {
				t.Fatalf("refusal %v matches neither ErrInvalid nor ErrUnsupported", err)
			}
			if s := err.Error(); !strings.Contains(s, "With") && !strings.Contains(s, "option ") && !strings.Contains(s, "interface name") {
				t.Fatalf("refusal %q names no option and no interface", s)
			}
			return
		}
		if name == "" || len(name) > 15 || strings.ContainsAny(name, "\x00/") {
			t.Fatalf("accepted interface name %q", name)
		}
		rings := max(c.ringsPerQueue, 1)
		switch {
		case c.tx < 0 || c.rx < 0 || c.tx+c.rx == 0 || c.tx > MaxQueues || c.rx > MaxQueues || c.tx*rings > MaxQueues:
			t.Fatalf("accepted queue counts %d/%d of %d rings", c.tx, c.rx, rings)
		case c.frameSize < 256 || c.frameSize > 65536 || c.frameSize&(c.frameSize-1) != 0:
			t.Fatalf("accepted frame size %d", c.frameSize)
		case c.frames < 0 || c.frames > MaxFrames || (c.frames > 0 && c.frames < c.need(rings)):
			t.Fatalf("accepted %d frames", c.frames)
		case c.txDepth < 64 || c.rxDepth < 64 || c.txDepth > 32768 || c.rxDepth > 32768:
			t.Fatalf("accepted depths %d/%d", c.txDepth, c.rxDepth)
		case c.steering != nil && c.rx == 0:
			t.Fatal("accepted steering without receive queues")
		}
		for _, cpu := range c.cpus {
			if cpu < 0 || cpu >= 1024 {
				t.Fatalf("accepted CPU %d", cpu)
			}
		}
	})
}
