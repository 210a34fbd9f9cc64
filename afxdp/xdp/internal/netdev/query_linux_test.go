package netdev

import (
	"errors"
	"flag"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/veth.hex and testdata/lo.hex from the running kernel")

// queryOrStop runs Query and turns "this kernel cannot answer" into the
// testenv verdict: a skip, or a failure under PACKETIO_CONFORM_REQUIRED.
func queryOrStop(t *testing.T, ifindex int) Features {
	t.Helper()
	f, err := Query(ifindex)
	if errors.Is(err, ErrNoFamily) {
		testenv.CannotRun(t, "%v", err)
	}
	if err != nil {
		t.Fatalf("Query(%d): %v", ifindex, err)
	}
	return f
}

// TestQueryLoopback asks about lo inside a fresh namespace, where its index
// is known to be 1 and nothing else has touched it: lo has no XDP features.
func TestQueryLoopback(t *testing.T) {
	p := netns.New(t)
	err := p.A.Do(func() error {
		lo, err := net.InterfaceByName("lo")
		if err != nil {
			return err
		}
		f := queryOrStop(t, lo.Index)
		if want := (Features{Ifindex: lo.Index}); f != want {
			t.Errorf("lo: %+v, want %+v", f, want)
		}
		if f.String() != "xdp none; rx-meta none; xsk none" {
			t.Errorf("lo String = %q", f.String())
		}
		writeGolden(t, "lo.hex", "NETDEV_CMD_DEV_GET reply attributes for lo", lo.Index)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestQueryVeth asks about one end of a veth pair from inside its
// namespace: veth on Linux 6.18 has basic, redirect and rx-sg XDP, every
// receive metadata kfunc, no zero-copy (so no zc-max-segs) and no AF_XDP
// transmit metadata.
func TestQueryVeth(t *testing.T) {
	p := netns.New(t)
	err := p.A.Do(func() error {
		f := queryOrStop(t, p.A.Index)
		want := Features{Ifindex: p.A.Index, XDP: XDPBasic | XDPRedirect | XDPRxSG, RxMetadata: RxMetaTimestamp | RxMetaHash | RxMetaVLANTag}
		if f != want {
			t.Errorf("veth %s: %+v (%s), want %+v", p.A.Link, f, f, want)
		}
		if f.ZeroCopy() || !f.RxSG() || !f.RxTimestamp() || !f.RxVLANTag() || f.TxChecksum() || f.TxTimestamp() || f.LaunchTime() {
			t.Errorf("veth helpers disagree with %s", f)
		}
		writeGolden(t, "veth.hex", "NETDEV_CMD_DEV_GET reply attributes for a veth inside a fresh network\nnamespace", p.A.Index)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestQueryFollowsThreadNamespace shows that Query answers for the calling
// thread's namespace: namespace B's veth index, asked from A where no such
// interface exists, is ENODEV rather than an answer about some other device.
func TestQueryFollowsThreadNamespace(t *testing.T) {
	p := netns.New(t)
	missing := p.A.Index + 1000
	err := p.A.Do(func() error {
		_, err := Query(missing)
		if errors.Is(err, ErrNoFamily) {
			testenv.CannotRun(t, "%v", err)
		}
		if !errors.Is(err, unix.ENODEV) {
			t.Errorf("Query(%d) in a namespace without it: %v; want ENODEV", missing, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Query(0); err == nil {
		t.Error("Query(0) succeeded")
	}
	if _, err := Query(-3); err == nil {
		t.Error("Query(-3) succeeded")
	}
}

// writeGolden refreshes a golden reply under -update.
func writeGolden(t *testing.T, name, comment string, ifindex int) {
	t.Helper()
	if !*update {
		return
	}
	b, err := queryRaw(ifindex)
	if err != nil {
		t.Fatal(err)
	}
	text := formatHex(comment+", captured on "+runtime.GOARCH+" (host byte order).", b)
	if err := os.WriteFile(filepath.Join("testdata", name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
