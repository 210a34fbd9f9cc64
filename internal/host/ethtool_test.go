package host

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeNIC answers SIOCETHTOOL the way the kernel does (net/ethtool/ioctl.c)
// for one interface with the given private flags.
type fakeNIC struct {
	mu     sync.Mutex
	ifname string
	names  []string // private flag names, in bit order; nil: no private flags
	flags  uint32
	err    error // returned by every request when set
	calls  []uint32
	closed int
}

func (f *fakeNIC) ethtool(ifname string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	cmd := ne.Uint32(data)
	f.calls = append(f.calls, cmd)
	if f.err != nil {
		return f.err
	}
	if ifname != f.ifname {
		return unix.ENODEV
	}
	switch cmd {
	case ethtoolGSSetInfo:
		mask := ne.Uint64(data[8:])
		out := uint64(0)
		if mask&(1<<ethSSPrivFlags) != 0 && f.names != nil {
			out = 1 << ethSSPrivFlags
			ne.PutUint32(data[16:], uint32(len(f.names)))
		}
		ne.PutUint64(data[8:], out)
	case ethtoolGStrings:
		if ne.Uint32(data[4:]) != ethSSPrivFlags {
			return unix.EOPNOTSUPP
		}
		n := int(ne.Uint32(data[8:]))
		if n != len(f.names) || len(data) < 12+n*ethGStringLen {
			return unix.EINVAL
		}
		for i, name := range f.names {
			s := data[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
			clear(s)
			copy(s, name)
		}
	case ethtoolGPFlags:
		if f.names == nil {
			return unix.EOPNOTSUPP
		}
		ne.PutUint32(data[4:], f.flags)
	case ethtoolSPFlags:
		if f.names == nil {
			return unix.EOPNOTSUPP
		}
		v := ne.Uint32(data[4:])
		if v>>len(f.names) != 0 {
			return unix.EINVAL
		}
		f.flags = v
	default:
		return unix.EOPNOTSUPP
	}
	return nil
}

func (f *fakeNIC) close() error {
	f.mu.Lock()
	f.closed++
	f.mu.Unlock()
	return nil
}

func (f *fakeNIC) opener() func() (ethtoolIO, error) {
	return func() (ethtoolIO, error) { return f, nil }
}

func (f *fakeNIC) get() uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.flags
}

// mlx5Flags are the private flags of a ConnectX-6 Dx on Linux 6.18.
var mlx5Flags = []string{"rx_cqe_moder", "tx_cqe_moder", "rx_cqe_compress", "rx_striding_rq", "rx_no_csum_complete", "xdp_tx_mpwqe", "skb_tx_mpwqe", "tx_port_ts"}

const mpwqeBit = 1 << 5

func TestPrivFlagNames(t *testing.T) {
	nic := &fakeNIC{ifname: "mlx0", names: mlx5Flags}
	names, err := privFlagNames(nic, "mlx0")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(names) != fmt.Sprint(mlx5Flags) {
		t.Fatalf("names = %v", names)
	}
	if got := fmt.Sprint(nic.calls); got != "[55 27]" {
		t.Fatalf("requests %s; want GSSET_INFO (0x37) then GSTRINGS (0x1b)", got)
	}
	none := &fakeNIC{ifname: "veth0"}
	if names, err := privFlagNames(none, "veth0"); err != nil || names != nil {
		t.Fatalf("no private flags: %v, %v", names, err)
	}
	unsupported := &fakeNIC{ifname: "x", err: unix.EOPNOTSUPP}
	if names, err := privFlagNames(unsupported, "x"); err != nil || names != nil {
		t.Fatalf("EOPNOTSUPP: %v, %v", names, err)
	}
}

// badNIC returns a count the flag mask cannot hold, or more strings than
// asked for.
type badNIC struct{ count, strings uint32 }

func (b badNIC) ethtool(_ string, data []byte) error {
	switch ne.Uint32(data) {
	case ethtoolGSSetInfo:
		ne.PutUint64(data[8:], 1<<ethSSPrivFlags)
		ne.PutUint32(data[16:], b.count)
	case ethtoolGStrings:
		ne.PutUint32(data[8:], b.strings)
	}
	return nil
}

func (badNIC) close() error { return nil }

func TestPrivFlagNamesBadReplies(t *testing.T) {
	if _, err := privFlagNames(badNIC{count: 33}, "x"); err == nil || !strings.Contains(err.Error(), "33 private flags") {
		t.Errorf("33 flags: %v", err)
	}
	if _, err := privFlagNames(badNIC{count: 2, strings: 3}, "x"); err == nil {
		t.Error("3 strings for 2 asked accepted")
	}
	if names, err := privFlagNames(badNIC{count: 0}, "x"); err != nil || names != nil {
		t.Errorf("0 flags: %v, %v", names, err)
	}
}

// TestSetPrivFlagFake: turning xdp_tx_mpwqe off, sharing, refusing, and
// restoring only that bit while another changed meanwhile.
func TestSetPrivFlagFake(t *testing.T) {
	nic := &fakeNIC{ifname: "mlx0", names: mlx5Flags, flags: mpwqeBit | 1<<2}
	d := t.TempDir()
	j1, j2, j3 := Journal{RunDir: d}, Journal{RunDir: d}, Journal{RunDir: d}
	for _, j := range []*Journal{&j1, &j2, &j3} {
		restoreOnCleanup(t, j)
	}
	changed, err := setPrivFlag(&j1, nic.opener(), "mlx0", "xdp_tx_mpwqe", false)
	if err != nil || !changed {
		t.Fatalf("setPrivFlag = %v, %v", changed, err)
	}
	if nic.get() != 1<<2 {
		t.Fatalf("flags %#x after turning xdp_tx_mpwqe off; want %#x", nic.get(), 1<<2)
	}
	if got := fmt.Sprint(j1.Changes()); got != "[private flag xdp_tx_mpwqe on mlx0: on -> off]" {
		t.Fatalf("Changes = %s", got)
	}
	if on, err := privFlag(nic, "mlx0", "xdp_tx_mpwqe"); err != nil || on {
		t.Fatalf("privFlag = %v, %v; want off", on, err)
	}
	if changed, err := setPrivFlag(&j2, nic.opener(), "mlx0", "xdp_tx_mpwqe", false); err != nil || changed {
		t.Fatalf("second fleet = %v, %v; want a shared reference", changed, err)
	}
	if _, err := setPrivFlag(&j3, nic.opener(), "mlx0", "xdp_tx_mpwqe", true); !errors.Is(err, ErrConflict) {
		t.Fatalf("third fleet asking for on = %v; want ErrConflict", err)
	}
	// Someone turns rx_cqe_moder on while the fleets run.
	nic.mu.Lock()
	nic.flags |= 1 << 0
	nic.mu.Unlock()
	if err := j1.Restore(); err != nil {
		t.Fatal(err)
	}
	if nic.get()&mpwqeBit != 0 {
		t.Fatal("restored while another fleet still holds it")
	}
	if err := j2.Restore(); err != nil {
		t.Fatal(err)
	}
	if want := uint32(mpwqeBit | 1<<2 | 1<<0); nic.get() != want {
		t.Fatalf("flags %#x after restore; want %#x (only our bit put back)", nic.get(), want)
	}
	if nic.closed != 1 {
		t.Fatalf("socket closed %d times; want once, by the last release", nic.closed)
	}
}

func TestSetPrivFlagAbsent(t *testing.T) {
	tests := []struct {
		name string
		nic  *fakeNIC
		want string
	}{
		{"no private flags", &fakeNIC{ifname: "eth0"}, "interface has no private flag xdp_tx_mpwqe"},
		{"other flags only", &fakeNIC{ifname: "eth0", names: []string{"legacy-rx"}}, "interface has no private flag xdp_tx_mpwqe"},
		{"driver without ethtool", &fakeNIC{ifname: "eth0", err: unix.EOPNOTSUPP}, "interface has no private flag xdp_tx_mpwqe"},
		{"no such interface", &fakeNIC{ifname: "other"}, "no such interface in this network namespace"},
		{"no permission", &fakeNIC{ifname: "eth0", err: unix.EPERM}, "no permission"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := Journal{RunDir: t.TempDir()}
			restoreOnCleanup(t, &j)
			changed, err := setPrivFlag(&j, tt.nic.opener(), "eth0", "xdp_tx_mpwqe", false)
			var u *UnavailableError
			if changed || !errors.As(err, &u) || u.Reason != tt.want && !strings.HasPrefix(u.Reason, tt.want) {
				t.Fatalf("setPrivFlag = %v, %v; want an *UnavailableError %q", changed, err, tt.want)
			}
			if tt.nic.closed != 1 {
				t.Fatalf("socket closed %d times; want 1", tt.nic.closed)
			}
			if len(j.Changes()) != 0 || heldCount() != 0 {
				t.Fatalf("journal holds %v", j.Changes())
			}
		})
	}
}

// TestSetPrivFlagWriteFails: a refused SPFLAGS leaves nothing held.
func TestSetPrivFlagWriteFails(t *testing.T) {
	// The device reports a stray bit 6 beyond its five flags, so the mask
	// written back with xdp_tx_mpwqe (bit 4) set is refused with EINVAL.
	nic := &fakeNIC{ifname: "mlx0", names: []string{"a", "b", "c", "d", "xdp_tx_mpwqe"}, flags: 1 << 6}
	j := Journal{RunDir: t.TempDir()}
	restoreOnCleanup(t, &j)
	if _, err := setPrivFlag(&j, nic.opener(), "mlx0", "xdp_tx_mpwqe", true); err == nil || !strings.Contains(err.Error(), "ETHTOOL_SPFLAGS") {
		t.Fatalf("setPrivFlag = %v; want the SPFLAGS failure", err)
	}
	if len(j.Changes()) != 0 || heldCount() != 0 || nic.closed != 1 {
		t.Fatalf("after a failed write: %v, registry %d, closed %d", j.Changes(), heldCount(), nic.closed)
	}
}

func TestSetPrivFlagArguments(t *testing.T) {
	j := Journal{RunDir: t.TempDir()}
	nic := &fakeNIC{ifname: "eth0"}
	for _, c := range []struct{ ifname, flag string }{
		{"", "x"}, {"a/b", "x"}, {"eth0", ""}, {"eth0", strings.Repeat("f", 32)},
	} {
		if _, err := setPrivFlag(&j, nic.opener(), c.ifname, c.flag, true); err == nil || errors.Is(err, ErrUnavailable) {
			t.Errorf("setPrivFlag(%q, %q) = %v; want an argument error", c.ifname, c.flag, err)
		}
	}
	if len(nic.calls) != 0 {
		t.Fatalf("bad arguments reached the device: %v", nic.calls)
	}
}
