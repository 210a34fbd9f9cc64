package afxdp

import (
	"encoding/binary"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/internal/fuzzopt"
)

// optionNamed is the start of a refusal that names an option: "WithX(".
var optionNamed = regexp.MustCompile(`With[A-Za-z]+\(`)

// fuzzOptions builds an Open option set from fuzz bytes: a selector byte,
// then eight bytes per value.
func fuzzOptions(b []byte) []Option {
	in := fuzzopt.New(b)
	next := in.Int64
	var opts []Option
	for in.More() {
		switch in.Kind(16) {
		case 0:
			opts = append(opts, WithSteering(packetio.SteeringFilter{Promiscuous: true}))
		case 1:
			opts = append(opts, WithQueues(next()))
		case 2:
			opts = append(opts, WithFrames(next()))
		case 3:
			opts = append(opts, WithFrameSize(next()))
		case 4:
			modes := [...]xdp.Option{xdp.WithZeroCopy(), xdp.WithDriverMode(), xdp.WithGenericMode()}
			opts = append(opts, WithXDP(modes[uint(next())%3]))
		case 5:
			opts = append(opts, WithHostTuning(xdp.Tuning{NAPIDefer: next(), NAPIFlush: time.Duration(next()), Place: next()&1 == 1, CPUs: []int{next(), next()}}))
		case 6:
			opts = append(opts, WithTransmitOnly())
		case 7:
			opts = append(opts, WithMultiBuffer())
		case 8:
			opts = append(opts, WithTxChecksumOffload(), WithTimestamps(), WithTxTimestamps())
		case 9:
			opts = append(opts, WithXDP(xdp.WithBusyPoll(next(), next())))
		case 10:
			opts = append(opts, WithXDP(xdp.WithTxReuseRxFrames()))
		case 11:
			opts = append(opts, WithReplaceProgram(), WithXDP(xdp.WithRingSize(next())))
		case 12:
			opts = append(opts, WithBusyPoll(next(), next()))
		case 13:
			opts = append(opts, WithPollSpin(time.Duration(next())*time.Microsecond))
		case 14:
			opts = append(opts, WithNUMANode(next()))
		case 15:
			opts = append(opts, WithCacheColours())
		}
	}
	return opts
}

// FuzzOptions: validate, which Open runs before it touches the kernel,
// accepts an option set or refuses it with ErrInvalid naming an option
// ("WithFrames(-1): ..."), or with ErrUnsupported for a missing steering
// filter or options that cannot combine; it never panics. Nothing is
// opened: the seed corpus runs in milliseconds.
func FuzzOptions(f *testing.F) {
	le := func(sel byte, vs ...int64) []byte {
		b := []byte{sel}
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
		return b
	}
	f.Add([]byte{})
	f.Add([]byte{0})
	f.Add(append([]byte{0}, le(1, -1)...))
	f.Add(append([]byte{0}, le(2, 1)...))
	f.Add(append([]byte{0}, le(3, 4096)...))
	f.Add(append([]byte{0}, le(5, 0, 0, 1, 0, -1)...))
	f.Add(append([]byte{0, 6}, le(2, 1)...))
	f.Add([]byte{0, 10, 7})
	f.Add(append([]byte{0}, le(9, 50, 0)...))
	f.Add(append([]byte{0}, le(14, -2)...))
	f.Add(append([]byte{0}, le(14, 0)...))
	f.Add([]byte{0, 15})
	f.Add([]byte{0, 15, 6})
	f.Add([]byte{0, 15, 7})
	f.Add(append([]byte{0, 15}, le(3, 8192)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := newConfig(fuzzOptions(b)).validate()
		switch {
		case err == nil:
		case errors.Is(err, packetio.ErrInvalid):
			if !optionNamed.MatchString(err.Error()) {
				t.Fatalf("ErrInvalid naming no option: %v", err)
			}
		case errors.Is(err, packetio.ErrUnsupported):
			if !strings.Contains(err.Error(), "WithSteering") && !strings.Contains(err.Error(), "cannot combine") {
				t.Fatalf("ErrUnsupported naming no option: %v", err)
			}
		default:
			t.Fatalf("neither ErrInvalid nor ErrUnsupported: %v", err)
		}
	})
}
