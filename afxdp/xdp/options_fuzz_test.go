package xdp

import (
	"encoding/binary"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/fuzzopt"
)

// TestValidate: every option value out of range is refused by Validate,
// before any I/O, with ErrInvalid and the option and value named; the zero
// values are the defaults and pass.
func TestValidate(t *testing.T) {
	all := WithFilter(filter.MatchAll())
	for _, tc := range []struct {
		name string
		opts []Option
		want string // "" accepts
	}{
		{"defaults", nil, ""},
		{"zero values", []Option{WithQueues(0), WithNumFrames(0), WithFrameSize(0), WithTxFrames(0), WithBusyPoll(0, 0), WithSharedMemory(0), WithHostTuning(Tuning{})}, ""},
		{"largest", []Option{WithQueues(MaxQueues), WithNumFrames(1 << 20), WithFrameSize(65536), WithBusyPoll(1000, 65535), WithHostTuning(Tuning{CPUs: []int{0, 1023}})}, ""},
		{"queues -1", []Option{WithQueues(-1)}, "WithQueues(-1): want 1 to 256, or 0 for every queue"},
		{"queues 257", []Option{WithQueues(257)}, "WithQueues(257): "},
		{"frames -1", []Option{WithNumFrames(-1)}, "WithNumFrames(-1): want 1 to 1048576, or 0 for 4096"},
		{"frames too many", []Option{WithNumFrames(1<<20 + 1)}, "WithNumFrames(1048577): "},
		{"frame size -1", []Option{WithFrameSize(-1)}, "WithFrameSize(-1): frame size is not a power of two from 2048 to 65536 (or 0 for 2048)"},
		{"frame size 3000", []Option{WithFrameSize(3000)}, "WithFrameSize(3000): "},
		{"frame size 1024", []Option{WithFrameSize(1024)}, "WithFrameSize(1024): "},
		{"frame size 131072", []Option{WithFrameSize(131072)}, "WithFrameSize(131072): "},
		{"tx frames -1", []Option{WithTxFrames(-1)}, "WithTxFrames(-1): "},
		{"tx frames above frames", []Option{WithNumFrames(64), WithTxFrames(65)}, "WithTxFrames(65): more than the 64 frames (WithNumFrames)"},
		{"tx frames all", []Option{WithNumFrames(64), WithTxFrames(64)}, "WithNumFrames(64), WithTxFrames(64): a receive ring with no receive frames"},
		{"one frame", []Option{WithNumFrames(1)}, "WithNumFrames(1), WithTxFrames(0): a transmit ring with no transmit frames"},
		{"ring 0", []Option{WithRingSize(0)}, "WithRingSize(0): both the receive and the transmit ring are 0"},
		{"ring -4", []Option{WithRingSize(-4)}, "WithRingSize(-4): ring sizes must be powers of two"},
		{"ring 3", []Option{WithRingSize(3)}, "WithRingSize(3): "},
		{"ring too deep", []Option{WithRingSize(1 << 21)}, "WithRingSize(2097152): "},
		{"rings fill 0", []Option{WithRingSizes(0, 64, 64, 64)}, "WithRingSizes(0, 64, 64, 64): "},
		{"rings rx only", []Option{WithRingSizes(64, 0, 64, 0)}, ""},
		{"busy poll -1", []Option{WithBusyPoll(-1, 8)}, "WithBusyPoll(-1, 8): "},
		{"busy poll half", []Option{WithBusyPoll(0, 8)}, "WithBusyPoll(0, 8): want both above 0"},
		{"busy budget", []Option{WithBusyPoll(50, 65536)}, "WithBusyPoll(50, 65536): "},
		{"shared -1", []Option{WithSharedMemory(-1)}, "WithSharedMemory(-1): want 0 to "},
		{"mgmt port 0", []Option{WithKeepManagement(8022, 0)}, "WithKeepManagement([8022 0]): port 0"},
		{"napi defer", []Option{WithHostTuning(Tuning{NAPIDefer: -1})}, "WithHostTuning(Tuning{NAPIDefer: -1}): "},
		{"napi flush", []Option{WithHostTuning(Tuning{NAPIFlush: -time.Microsecond})}, "WithHostTuning(Tuning{NAPIFlush: -1µs}): "},
		{"shared hook 0", []Option{WithSharedHook(0)}, ""},
		{"shared hook -1", []Option{WithSharedHook(-1)}, "WithSharedHook(-1): want a run priority from 1 to 2147483647 (lower runs first), or 0 for 50"},
		{"cpu 1024", []Option{WithHostTuning(Tuning{CPUs: []int{1024}})}, "WithHostTuning(Tuning{CPUs: [1024]}): CPU 1024 is outside 0 to 1023"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(append([]Option{all}, tc.opts...)...)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			var oe *packetio.OpError
			if !errors.As(err, &oe) || oe.Op != "open" || !errors.Is(err, packetio.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want an open OpError matching ErrInvalid saying %q", err, tc.want)
			}
		})
	}
	if err := Validate(); !errors.Is(err, packetio.ErrUnsupported) || !strings.Contains(err.Error(), "WithFilter") {
		t.Errorf("Validate without a filter: %v, want ErrUnsupported naming WithFilter", err)
	}
}

// optionNamed is the start of a refusal that names an option: "WithX(".
var optionNamed = regexp.MustCompile(`With[A-Za-z]+\(`)

// fuzzOptions builds an option set from fuzz bytes, eight bytes a value.
func fuzzOptions(b []byte) []Option {
	in := fuzzopt.New(b)
	next := in.Int64
	opts := []Option{WithFilter(filter.MatchAll())}
	for in.More() {
		switch in.Kind(18) {
		case 0:
			opts = append(opts, WithQueues(next()))
		case 1:
			opts = append(opts, WithNumFrames(next()))
		case 2:
			opts = append(opts, WithFrameSize(next()))
		case 3:
			opts = append(opts, WithTxFrames(next()))
		case 4:
			opts = append(opts, WithRingSize(next()))
		case 5:
			opts = append(opts, WithRingSizes(next(), next(), next(), next()))
		case 6:
			opts = append(opts, WithBusyPoll(next(), next()))
		case 7:
			opts = append(opts, WithSharedMemory(next()))
		case 8:
			opts = append(opts, WithHostTuning(Tuning{NAPIDefer: next(), NAPIFlush: time.Duration(next()), CPUs: []int{next(), next()}}))
		case 9:
			opts = append(opts, WithKeepManagement(uint16(next())))
		case 10:
			opts = append(opts, [...]Option{WithZeroCopy(), WithDriverMode(), WithGenericMode()}[next()&3%3])
		case 11:
			opts = append(opts, WithMultiBuffer(), WithNeedWakeup())
		case 12:
			opts = append(opts, WithTxMetadata(), WithRxTimestamps())
		case 13:
			opts = append(opts, WithTxReuseRxFrames())
		case 14:
			opts = append(opts, WithPollSpin(time.Duration(next())*time.Microsecond))
		case 15:
			opts = append(opts, WithNUMANode(next()))
		case 16:
			opts = append(opts, WithSharedHook(next()))
		case 17:
			opts = append(opts, WithCacheColours())
		}
	}
	return opts
}

// FuzzValidate: any option set is accepted or refused with ErrInvalid
// naming an option (or ErrUnsupported for options that cannot combine),
// never a panic; an accepted set has a geometry every socket can take.
// Nothing is opened.
func FuzzValidate(f *testing.F) {
	le := func(vs ...int64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
		return b
	}
	f.Add([]byte{})
	f.Add(append([]byte{0}, le(-1)...))
	f.Add(append([]byte{2}, le(4096)...))
	f.Add(append(append([]byte{1}, le(64)...), append([]byte{3}, le(64)...)...))
	f.Add(append([]byte{5}, le(64, 64, 0, 64)...))
	f.Add(append([]byte{6}, le(50, 0)...))
	f.Add(append([]byte{8}, le(0, 0, 3, -1)...))
	f.Add([]byte{13, 11})
	f.Add(append([]byte{15}, le(-2)...))
	f.Add(append([]byte{16}, le(-1)...))
	f.Add([]byte{17})
	f.Add(append([]byte{17, 2}, le(2048)...))
	f.Add([]byte{17, 11})
	f.Add(append([]byte{17, 5}, le(64, 64, 0, 64)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		opts := fuzzOptions(b)
		err := Validate(opts...)
		if err == nil {
			g, gerr := newConfig(opts).geometry()
			if gerr != nil || g.frameSize < minFrameSize || g.numFrames <= 0 || g.txFrames < 0 || g.txFrames > g.numFrames {
				t.Fatalf("accepted, but geometry %+v, %v", g, gerr)
			}
			return
		}
		switch {
		case errors.Is(err, packetio.ErrInvalid):
			if !optionNamed.MatchString(err.Error()) {
				t.Fatalf("ErrInvalid naming no option: %v", err)
			}
		case errors.Is(err, packetio.ErrUnsupported):
			if !strings.Contains(err.Error(), "cannot combine") {
				t.Fatalf("ErrUnsupported for no combination: %v", err)
			}
		default:
			t.Fatalf("neither ErrInvalid nor ErrUnsupported: %v", err)
		}
	})
}
