//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/xskopt"
)

// TestNewSockets: the port's sockets are those that were not there
// before, whatever descriptors they got, in descriptor order.
func TestNewSockets(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after map[uint64]int
		want          []int
	}{
		{"none before", nil, map[uint64]int{7: 12, 5: 10}, []int{10, 12}},
		{"one kept, one new", map[uint64]int{5: 10}, map[uint64]int{5: 10, 9: 11}, []int{11}},
		{"a descriptor reused by a new socket", map[uint64]int{5: 10}, map[uint64]int{6: 10}, []int{10}},
		{"one closed, none new", map[uint64]int{5: 10, 6: 11}, map[uint64]int{5: 10}, nil},
		{"nothing", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := newSockets(tc.before, tc.after); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("newSockets = %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzSocketInode: a /proc link is a socket's only when it is
// "socket:[N]" with N decimal digits, and the inode is N; a link of that
// form whose number fits 64 bits is never refused.
func FuzzSocketInode(f *testing.F) {
	for _, seed := range []string{"socket:[12345]", "socket:[]", "socket:[12", "socket:12]", "pipe:[7]", "anon_inode:[perf_event]", "/dev/null", "socket:[+1]", "socket:[007]", "socket:[18446744073709551616]"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, link string) {
		ino, ok := socketInode(link)
		inner, framed := strings.CutPrefix(link, "socket:[")
		inner, closed := strings.CutSuffix(inner, "]")
		digits := framed && closed && inner != "" && strings.Trim(inner, "0123456789") == ""
		significant := strings.TrimLeft(inner, "0")
		switch {
		case ok && !digits:
			t.Errorf("socketInode(%q) = %d: took a link that is no socket:[N]", link, ino)
		case ok && significant != strings.TrimLeft(strconv.FormatUint(ino, 10), "0"):
			t.Errorf("socketInode(%q) = %d: not the number in the link", link, ino)
		case !ok && digits && len(significant) < 20: // fewer than 20 digits always fit
			t.Errorf("socketInode(%q) refused a socket link", link)
		}
	})
}

// TestTxBudgetLeavesStrangersAlone: when more XDP sockets appear during an
// Open than it has receive queues (another backend binding at the same
// moment), none is touched and Info says why the budget stayed the
// kernel's.
func TestTxBudgetLeavesStrangersAlone(t *testing.T) {
	testenv.NeedRoot(t)
	ps := &portSetup{d: &Device{}, c: &config{rxQueues: 1}, xsk: true, rxDepth: 256}
	ps.snapshotSockets()
	for range 2 {
		fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			testenv.CannotRun(t, "an AF_XDP socket: %v", err)
		}
		defer unix.Close(fd)
	}
	ps.raiseTxBudget()
	if in := ps.d.info; in.TxBudget != xskopt.DefaultTxBudget || in.TxBudgetKept != "2 XDP sockets appeared for 1 receive queues: left as they are" {
		t.Errorf("TxBudget %d, kept %q; want %d and why", in.TxBudget, in.TxBudgetKept, xskopt.DefaultTxBudget)
	}
}

// TestAFXDPOneKickABurst: net_af_xdp's sockets get a transmit budget of
// their ring (Info.TxBudget), so the driver sends a burst of 200 with one
// kick, where at the kernel's budget of 32 it kicks until the ring is
// empty, seven times; the kernel counts the calls on the sending thread.
// At batch 64 sending costs at most one system call per 32 packets: the
// kick, and the empty burst Complete pokes the driver with to reap its
// completions (so the frames SendFunc reuses are those it sent last).
func TestAFXDPOneKickABurst(t *testing.T) {
	// The driver leaks the sockets of ports closed before (README.md), so
	// the port's socket is the one its Open added.
	held, err := xdpSockets()
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := openAFXDP(t)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := d.Info()
	if in.TxBudget != 256 || in.TxBudgetKept != "" { // afxdpOpts: WithRxDepth(256), the socket's rings
		t.Fatalf("TxBudget %d (%q), want 256, the transmit ring", in.TxBudget, in.TxBudgetKept)
	}
	c := testenv.ThreadSyscalls(t)
	tx := d.TxQueue(0)
	// send makes bursts calls of SendFunc(batch) and returns the system
	// calls the thread made.
	send := func(bursts, batch int) uint64 {
		t.Helper()
		settle(tx)
		before, err := c.Count()
		if err != nil {
			t.Fatal(err)
		}
		sent, short := 0, 0
		for sent < bursts*batch {
			n, err := tx.SendFunc(batch, benchBuild)
			if err != nil {
				t.Fatalf("SendFunc after %d: %v", sent, err)
			}
			if n < batch {
				if short++; short > 100 {
					t.Fatalf("sent %d of %d frames, %d bursts short of frames", sent, bursts*batch, short)
				}
			}
			sent += n
		}
		after, err := c.Count()
		if err != nil {
			t.Fatal(err)
		}
		return after - before - 1 // the second read is not the loop's
	}

	const bursts = 100
	raised := send(bursts, 200)
	all, err := xdpSockets()
	socks := newSockets(held, all)
	if err != nil || len(socks) != 1 {
		t.Fatalf("XDP sockets the port's Open added: %v (%v); want its one", socks, err)
	}
	setBudget := func(b int) {
		for _, fd := range socks {
			if err := unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	setBudget(xskopt.DefaultTxBudget)
	kernels := send(bursts, 200)
	setBudget(256)
	// Two a burst (its kick, a poke), and a few for Go's runtime.
	if limit := uint64(2*bursts + bursts/10); raised > limit || kernels < 5*bursts {
		t.Errorf("%d bursts of 200: %d system calls at the raised budget (want at most %d), %d at the kernel's (want 5 a burst or more)", bursts, raised, limit, kernels)
	}
	t.Logf("%d bursts of 200: %d system calls at the raised budget, %d at the kernel's", bursts, raised, kernels)

	if calls, limit := send(2*bursts, 64), uint64(2*2*bursts+bursts/10); calls > limit {
		t.Errorf("%d bursts of 64: %d system calls, want at most %d (one per 32 packets)", 2*bursts, calls, limit)
	} else {
		t.Logf("%d bursts of 64: %d system calls", 2*bursts, calls)
	}

	// A second port finds its own socket, not the first's as well (which
	// would make two new sockets for one queue, and leave both alone).
	p2 := netns.New(t)
	d2, err := openIn(t, p2.A, "net_af_xdp1,iface="+p2.A.Link, append(afxdpOpts(), WithRxDepth(512))...)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if in := d2.Info(); in.TxBudget != 512 || in.TxBudgetKept != "" {
		t.Errorf("second port: TxBudget %d (%q), want 512, its ring", in.TxBudget, in.TxBudgetKept)
	}
}
