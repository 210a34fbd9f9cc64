package netdev

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mdlayher/netlink"
)

// readHex reads a testdata file of hex bytes, with # comments to the end of
// a line.
func readHex(tb testing.TB, name string) []byte {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	b, err := parseHex(string(raw))
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return b
}

func parseHex(s string) ([]byte, error) {
	var digits strings.Builder
	for _, line := range strings.Split(s, "\n") {
		line, _, _ = strings.Cut(line, "#")
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	return hex.DecodeString(digits.String())
}

// formatHex writes b as a testdata file: one attribute a line.
func formatHex(comment string, b []byte) string {
	var out strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(comment), "\n") {
		out.WriteString("# " + l + "\n")
	}
	for len(b) >= 4 {
		n := int(binary.NativeEndian.Uint16(b))
		n = (n + 3) &^ 3
		if n < 4 || n > len(b) {
			n = len(b)
		}
		out.WriteString(hex.EncodeToString(b[:n]) + "\n")
		b = b[n:]
	}
	if len(b) > 0 {
		out.WriteString(hex.EncodeToString(b) + "\n")
	}
	return out.String()
}

func littleEndian() bool {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], 1)
	return b[0] == 1
}

func TestDecodeGolden(t *testing.T) {
	if !littleEndian() {
		t.Skip("the golden replies were captured on a little-endian machine")
	}
	tests := []struct {
		file    string
		want    Features
		str     string
		wantErr string
	}{
		{file: "veth.hex", want: Features{Ifindex: 2, XDP: 0x23, RxMetadata: 0x7},
			str: "xdp basic,redirect,rx-sg; rx-meta timestamp,hash,vlan-tag; xsk none"},
		{file: "lo.hex", want: Features{Ifindex: 1},
			str: "xdp none; rx-meta none; xsk none"},
		{file: "virtio-zc.hex", want: Features{Ifindex: 3, XDP: 0x2b, ZCMaxSegs: 1},
			str: "xdp basic,redirect,xsk-zerocopy,rx-sg zc-max-segs=1; rx-meta none; xsk none"},
		{file: "mlx5-like.hex", want: Features{Ifindex: 7, XDP: 0xff, ZCMaxSegs: 17, RxMetadata: 7, XSK: 7},
			str: "xdp basic,redirect,ndo-xmit,xsk-zerocopy,hw-offload,rx-sg,ndo-xmit-sg,0x80 zc-max-segs=17; " +
				"rx-meta timestamp,hash,vlan-tag; xsk tx-timestamp,tx-checksum,tx-launch-time-fifo"},
		{file: "short-uint.hex", want: Features{Ifindex: 5, XDP: 3, RxMetadata: 2, XSK: 2},
			str: "xdp basic,redirect; rx-meta hash; xsk tx-checksum"},
		{file: "bad-ifindex-size.hex", wantErr: "ifindex is 2 bytes"},
		{file: "truncated.hex", wantErr: "decode reply"},
		{file: "no-ifindex.hex", wantErr: "no ifindex"},
		{file: "bad-xdp-size.hex", wantErr: "xdp-features is 6 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := Decode(readHex(t, tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Decode = %+v, %v; want an error containing %q", got, err, tt.wantErr)
				}
				if got != (Features{}) {
					t.Errorf("Decode returned %+v beside its error; want the zero Features", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got != tt.want {
				t.Errorf("Decode = %+v, want %+v", got, tt.want)
			}
			if s := got.String(); s != tt.str {
				t.Errorf("String = %q\nwant       %q", s, tt.str)
			}
		})
	}
}

func TestDecodeEmpty(t *testing.T) {
	if _, err := Decode(nil); err == nil {
		t.Fatal("Decode(nil) succeeded; a reply without an ifindex must be refused")
	}
}

// TestDecodeFlagBits checks that NLA_F_NESTED / NLA_F_NET_BYTEORDER bits on
// an attribute type do not hide it.
func TestDecodeFlagBits(t *testing.T) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrIfindex|0x8000, 9)
	ae.Uint64(attrXDPFeatures|0x4000, XDPBasic|XDPRedirect)
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Features{Ifindex: 9, XDP: 3}); got != want {
		t.Fatalf("Decode = %+v, want %+v", got, want)
	}
}

func TestHelpers(t *testing.T) {
	all := Features{XDP: 0x7f, RxMetadata: 7, XSK: 7}
	none := Features{}
	checks := []struct {
		name string
		fn   func(Features) bool
	}{
		{"ZeroCopy", Features.ZeroCopy},
		{"RxSG", Features.RxSG},
		{"RxTimestamp", Features.RxTimestamp},
		{"RxVLANTag", Features.RxVLANTag},
		{"TxChecksum", Features.TxChecksum},
		{"TxTimestamp", Features.TxTimestamp},
		{"LaunchTime", Features.LaunchTime},
	}
	for _, c := range checks {
		if !c.fn(all) || c.fn(none) {
			t.Errorf("%s: all bits %v, no bits %v; want true, false", c.name, c.fn(all), c.fn(none))
		}
	}
	// Each helper looks at its own bit only.
	single := []struct {
		f    Features
		name string
	}{
		{Features{XDP: XDPZeroCopy}, "ZeroCopy"},
		{Features{XDP: XDPRxSG}, "RxSG"},
		{Features{RxMetadata: RxMetaTimestamp}, "RxTimestamp"},
		{Features{RxMetadata: RxMetaVLANTag}, "RxVLANTag"},
		{Features{XSK: XSKTxChecksum}, "TxChecksum"},
		{Features{XSK: XSKTxTimestamp}, "TxTimestamp"},
		{Features{XSK: XSKTxLaunchTime}, "LaunchTime"},
	}
	for _, s := range single {
		for _, c := range checks {
			if got, want := c.fn(s.f), c.name == s.name; got != want {
				t.Errorf("%s on %+v = %v, want %v", c.name, s.f, got, want)
			}
		}
	}
}

func TestFamilyError(t *testing.T) {
	missing := familyError(fmt.Errorf("netlink receive: %w", os.ErrNotExist))
	if !errors.Is(missing, ErrNoFamily) {
		t.Errorf("a missing family gave %v; want it to wrap ErrNoFamily", missing)
	}
	if !strings.Contains(missing.Error(), "no netdev generic-netlink family") {
		t.Errorf("error %q does not say the family is missing", missing)
	}
	other := familyError(os.ErrPermission)
	if errors.Is(other, ErrNoFamily) || !errors.Is(other, os.ErrPermission) {
		t.Errorf("a permission error gave %v; want it wrapped as itself, not as ErrNoFamily", other)
	}
}

// encode is Decode's inverse.
func encode(f Features) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrIfindex, uint32(f.Ifindex))
	ae.Uint64(attrXDPFeatures, f.XDP)
	if f.ZCMaxSegs != 0 {
		ae.Uint32(attrXDPZCMaxSegs, f.ZCMaxSegs)
	}
	ae.Uint64(attrRxMetadata, f.RxMetadata)
	ae.Uint64(attrXSKFeatures, f.XSK)
	return ae.Encode()
}

// FuzzDecode feeds arbitrary bytes to Decode: it must never panic, and
// whatever it accepts must survive a round trip through the encoder.
func FuzzDecode(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".hex") {
			f.Add(readHex(f, e.Name()))
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x04, 0x00, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Decode(b)
		if err != nil {
			if got != (Features{}) {
				t.Fatalf("Decode returned %+v beside error %v", got, err)
			}
			return
		}
		_ = got.String()
		if got.Ifindex <= 0 {
			t.Fatalf("Decode accepted ifindex %d", got.Ifindex)
		}
		again, err := encode(got)
		if err != nil {
			t.Fatalf("encode %+v: %v", got, err)
		}
		back, err := Decode(again)
		if err != nil || back != got {
			t.Fatalf("round trip of %+v gave %+v, %v", got, back, err)
		}
	})
}

func TestFormatHexRoundTrip(t *testing.T) {
	b := readHex(t, "mlx5-like.hex")
	again, err := parseHex(formatHex("x", b))
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("formatHex/parseHex changed the bytes: %x -> %x (%v)", b, again, err)
	}
}
