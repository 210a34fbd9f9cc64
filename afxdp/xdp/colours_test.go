package xdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/netns"
)

// TestColourAddresses: the fill address of a frame is its start plus 64
// bytes times its colour, the frame number modulo 32; without colours it is
// the frame. A receive descriptor's address in the unaligned-chunk form
// (offset in the high 16 bits) decodes to the plain offset, and a plain one
// is left alone.
func TestColourAddresses(t *testing.T) {
	u := &umem{frameSize: ColourFrameSize, mask: ColourFrameSize - 1, shift: 12, chunk: ColourFrameSize}
	if got := u.fillAddr(5 << 12); got != 5<<12 || u.colours() != 0 {
		t.Fatalf("without colours: fill address %#x, %d colours; want the frame, 0", got, u.colours())
	}
	u.colour()
	if u.chunk != 2048 || u.colours() != 32 {
		t.Fatalf("colours: chunk %d, %d colours; want 2048, 32", u.chunk, u.colours())
	}
	for _, tc := range []struct{ frame, want uint64 }{
		{0, 0},
		{1, 1<<12 + 64},
		{31, 31<<12 + 31*64},
		{32, 32 << 12},
		{33, 33<<12 + 64},
		{4095, 4095<<12 + 31*64},
	} {
		got := u.fillAddr(tc.frame << 12)
		if got != tc.want {
			t.Errorf("frame %d: fill address %#x, want %#x", tc.frame, got, tc.want)
		}
		if end := got + uint64(u.chunk); u.base(got) != tc.frame<<12 || end > (tc.frame+1)<<12 {
			t.Errorf("frame %d: the kernel's buffer [%#x, %#x) leaves its frame", tc.frame, got, end)
		}
	}
	for _, tc := range []struct{ kernel, want uint64 }{
		{0x5040, 0x5040},
		{256<<48 | 0x5040, 0x5140},
		{(256+16)<<48 | 0x1fc0, 0x20d0},
		{1<<48 - 1, 1<<48 - 1},
	} {
		if got := rxAddr(tc.kernel); got != tc.want {
			t.Errorf("rxAddr(%#x) = %#x, want %#x", tc.kernel, got, tc.want)
		}
	}
}

// TestCacheColoursRefused: what colours cannot do is refused before
// anything is opened, naming the options.
func TestCacheColoursRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want error
		says string
	}{
		{"2048-byte frames", []Option{WithFrameSize(2048)}, packetio.ErrInvalid, "WithFrameSize(2048) with WithCacheColours: colours need 4096-byte frames"},
		{"8192-byte frames", []Option{WithFrameSize(8192)}, packetio.ErrInvalid, "WithFrameSize(8192)"},
		{"multi-buffer", []Option{WithMultiBuffer()}, packetio.ErrUnsupported, "WithCacheColours cannot combine with WithMultiBuffer"},
		{"no receive ring", []Option{WithRingSizes(64, 64, 0, 64)}, packetio.ErrUnsupported, "no receive ring"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(append([]Option{WithFilter(filter.MatchAll()), WithCacheColours()}, tc.opts...)...)
			if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.says) {
				t.Fatalf("Validate: %v; want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
	if err := Validate(WithFilter(filter.MatchAll()), WithCacheColours(), WithFrameSize(ColourFrameSize)); err != nil {
		t.Fatalf("WithFrameSize(%d) with colours: %v", ColourFrameSize, err)
	}
}

// TestCacheColoursReceive: with colours every packet arrives byte for byte,
// 256 bytes (272 with stamps) past its frame's colour, over many colours;
// Info and MaxPacket say what the frames are.
func TestCacheColoursReceive(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      []Option
		maxPacket int
		offset    uint64
	}{
		{"plain", nil, 1792, RxHeadroom},
		{"stamps", []Option{WithRxTimestamps()}, 1776, RxHeadroom + filter.RxMetadataLen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := vethPair(t)
			f := openIn(t, p.B, append([]Option{WithFilter(filter.MatchEtherType(testEtherType)), WithCacheColours()}, tc.opts...)...)
			in, err := f.Info()
			if err != nil {
				t.Fatal(err)
			}
			s := f.Socket(0)
			if in.Colours != 32 || in.FrameSize != ColourFrameSize || in.NumFrames != DefaultNumFrames/2 || s.MaxPacket() != tc.maxPacket ||
				!strings.Contains(in.String(), "2048x4096B frames in 32 cache colours") {
				t.Fatalf("Info colours %d, %dx%dB frames, MaxPacket %d (%s); want 32, 2048x4096B, %d", in.Colours, in.NumFrames, in.FrameSize, s.MaxPacket(), in, tc.maxPacket)
			}
			sent := sendTestFrames(t, p.A, 300, 1440)
			got, colours := map[uint32][]byte{}, map[uint64]bool{}
			for deadline := time.Now().Add(3 * time.Second); len(got) < len(sent) && time.Now().Before(deadline); {
				s.Fill(s.NumFreeFillSlots())
				if _, err := s.Poll(10 * time.Millisecond); err != nil {
					t.Fatal(err)
				}
				descs := s.Receive(256)
				for _, d := range descs {
					colour := d.Addr >> 12 & 31
					if off := d.Addr & (ColourFrameSize - 1); off != colour*64+tc.offset {
						t.Fatalf("packet at %#x: %d bytes into its frame, want %d (colour %d)", d.Addr, off, colour*64+tc.offset, colour)
					}
					colours[colour] = true
					if b := s.GetFrame(d); len(b) >= 18 && binary.BigEndian.Uint16(b[12:]) == testEtherType {
						got[binary.BigEndian.Uint32(b[14:])] = bytes.Clone(b)
					}
				}
				s.Recycle(descs)
			}
			sameFrames(t, f, got, sent)
			if len(colours) != 32 {
				t.Errorf("packets in %d colours, want all 32", len(colours))
			}
		})
	}
}

// TestCacheColoursLongLink: on a link whose MTU carries packets longer than
// a coloured frame holds, Open refuses colours, saying why, and leaves no
// program on the interface.
func TestCacheColoursLongLink(t *testing.T) {
	for _, tc := range []struct {
		name string
		mtu  int
		opts []Option
		says string
	}{
		{"MTU 1800", 1800, nil, "carries packets of up to 1818 bytes (its MTU, the Ethernet header and a VLAN tag), and a coloured frame holds 1792"},
		{"MTU 1760, stamps", 1760, []Option{WithRxTimestamps()}, "up to 1778 bytes (its MTU, the Ethernet header and a VLAN tag), and a coloured frame holds 1776"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := vethPair(t, netns.WithMTU(tc.mtu))
			err := p.B.Do(func() error {
				f, err := Open(p.B.Link, append([]Option{WithFilter(filter.MatchEtherType(testEtherType)), WithCacheColours()}, tc.opts...)...)
				if err == nil {
					f.Close()
				}
				return err
			})
			if !errors.Is(err, packetio.ErrUnsupported) || !strings.Contains(fmt.Sprint(err), tc.says) {
				t.Fatalf("Open: %v; want ErrUnsupported saying %q", err, tc.says)
			}
			if id := xdpAttached(t, p.B); id != 0 {
				t.Errorf("program %d left on %s", id, p.B.Link)
			}
		})
	}
	// One byte less fits.
	p := vethPair(t, netns.WithMTU(1792-18))
	openIn(t, p.B, WithFilter(filter.MatchEtherType(testEtherType)), WithCacheColours())
}
