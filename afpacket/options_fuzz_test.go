package afpacket

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/fuzzopt"
)

// fuzzOptions decodes b into an interface name and a list of options: each
// option is a kind byte and, for the counted ones, a signed 32-bit value.
func fuzzOptions(b []byte) (string, []Option) {
	in := fuzzopt.New(b)
	name := in.Name("veth0")
	var opts []Option
	for in.More() && len(opts) < 16 {
		kind, v := in.Kind(15), in.Int32()
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
			opts = append(opts, WithBlockSize(v))
		case 6:
			opts = append(opts, WithGSO())
		case 7:
			opts = append(opts, WithMultiBuffer())
		case 8:
			opts = append(opts, WithLowLatency())
		case 9:
			opts = append(opts, nil)
		case 10:
			opts = append(opts, WithFrames(v<<16)) // big counts
		case 11:
			opts = append(opts, WithTxTimestamps())
		case 12:
			opts = append(opts, WithNUMANode(v))
		case 13:
			opts = append(opts, WithSteering(fuzzSteering(int32(v))))
		case 14:
			opts = append(opts, WithFilterExpr(fuzzExprs[uint32(v)%uint32(len(fuzzExprs))]))
		}
	}
	return name, opts
}

// FuzzValidate checks every option combination without opening anything:
// validate never panics; a refusal wraps ErrInvalid and names an option,
// an option's position or the interface; an accepted configuration is one
// Open can build.
func FuzzValidate(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 4, 0, 0, 0})
	f.Add([]byte{0x85, 'a', '/', 'b', 'c', 'd', 3, 0, 0, 0, 0x40})
	f.Add([]byte{0, 6, 4, 0, 8, 0, 0, 7, 8})
	f.Add([]byte{0, 9})
	f.Add([]byte{0, 11, 0xfe, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		name, opts := fuzzOptions(b)
		r, err := validate(name, opts)
		if err != nil {
			if errors.Is(err, packetio.ErrUnsupported) && strings.Contains(err.Error(), "WithSteering(") {
				return // a filter the steering contract refuses
			}
			if !errors.Is(err, packetio.ErrInvalid) {
				t.Fatalf("refusal %v does not match ErrInvalid", err)
			}
			if s := err.Error(); !strings.Contains(s, "With") && !strings.Contains(s, "option ") && !strings.Contains(s, "interface name") {
				t.Fatalf("refusal %q names no option and no interface", s)
			}
			return
		}
		if name == "" || len(name) > 15 || strings.ContainsAny(name, "\x00/") {
			t.Fatalf("accepted interface name %q", name)
		}
		for i, o := range opts {
			if o == nil {
				t.Fatalf("accepted nil option %d", i+1)
			}
		}
		switch {
		case r.txQueues < 0 || r.rxQueues < 0 || r.txQueues+r.rxQueues == 0 || r.txQueues > MaxQueues || r.rxQueues > MaxQueues:
			t.Fatalf("accepted queue counts %d/%d", r.txQueues, r.rxQueues)
		case r.frameSize < minFrameSize || r.frameSize > maxFrameSize || r.frameSize&(r.frameSize-1) != 0:
			t.Fatalf("accepted frame size %d", r.frameSize)
		case r.frames <= 0 || r.frames > maxRegionBytes/r.frameSize:
			t.Fatalf("accepted %d frames of %d bytes", r.frames, r.frameSize)
		case r.perQueue < minQueueFrames || r.perQueue*(r.txQueues+r.rxQueues) > r.frames:
			t.Fatalf("accepted %d frames per queue of %d over %d queues", r.perQueue, r.frames, r.txQueues+r.rxQueues)
		case r.blockSize < pageSize || r.blockSize > maxBlockSize || r.blockSize&(r.blockSize-1) != 0 || r.blocks < minBlocks:
			t.Fatalf("accepted %d blocks of %d bytes", r.blocks, r.blockSize)
		case r.lowLatency && (r.v2FrameSize <= 0 || r.v2BlockSize < r.v2FrameSize || r.v2Blocks < minBlocks):
			t.Fatalf("accepted a V2 ring of %d blocks of %d bytes in %d-byte slots", r.v2Blocks, r.v2BlockSize, r.v2FrameSize)
		case (r.rxFilter != nil) != (len(r.rxFilterRaw) > 0) || len(r.rxFilterRaw) > 4096 || (r.rxFilter != nil && r.rxQueues == 0):
			t.Fatalf("accepted a %d-instruction receive filter (%d assembled) with %d receive queues", len(r.rxFilter), len(r.rxFilterRaw), r.rxQueues)
		}
	})
}

// fuzzExprs are the tcpdump expressions the option fuzzer picks from.
var fuzzExprs = []string{"", " ", "udp port 53", "ip6 and not tcp", "udp port", "vlan 5 and ether proto 0x88b5", "(", "host 10.0.0.1"}

// fuzzSteering builds a steering filter from the bits of v: up to four
// matches, contradictions included.
func fuzzSteering(v int32) packetio.SteeringFilter {
	var f packetio.SteeringFilter
	for i := range 4 {
		b := uint32(v) >> (8 * i) & 0xff
		switch b % 8 {
		case 0:
		case 1:
			f.Match = append(f.Match, packetio.MatchVLAN(uint16(b)*20))
		case 2:
			f.Match = append(f.Match, packetio.MatchEtherType(uint16(b)<<8))
		case 3:
			f.Match = append(f.Match, packetio.MatchIPProto(uint8(b>>3)))
		case 4:
			f.Match = append(f.Match, packetio.MatchDstPort(uint8(b>>3)|1, uint16(b))...)
		case 5:
			f.Match = append(f.Match, packetio.MatchSrcIP(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(b)}), int(b%33))))
		case 6:
			f.Match = append(f.Match, packetio.MatchDstIP(netip.PrefixFrom(netip.IPv6Loopback(), int(b%129))))
		case 7:
			f.Promiscuous = b&8 != 0
		}
	}
	return f
}
