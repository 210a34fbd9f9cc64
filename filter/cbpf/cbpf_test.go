package cbpf_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/filter/cbpf"
	"github.com/packetio/packetio/internal/steerfuzz"
	"github.com/packetio/packetio/internal/testenv"
)

// frames are steerfuzz's frames and truncated copies of each: a load past
// the end must fail only its own condition, as in the eBPF program.
func frames(t testing.TB) [][]byte {
	var out [][]byte
	for _, b := range steerfuzz.Frames(t) {
		out = append(out, b)
		for _, n := range []int{14, 18, 30, 36, 56} {
			if n < len(b) {
				out = append(out, append([]byte(nil), b[:n]...))
			}
		}
	}
	return out
}

// vmProgram replaces the loads of the stripped VLAN tag, which the Go VM
// does not implement, with "no tag": the frames here carry their tags in
// the data, as BPF_PROG_TEST_RUN frames do.
func vmProgram(prog []bpf.Instruction) []bpf.Instruction {
	out := append([]bpf.Instruction(nil), prog...)
	for i, ins := range out {
		if e, ok := ins.(bpf.LoadExtension); ok && (e.Num == bpf.ExtVLANTagPresent || e.Num == bpf.ExtVLANTag) {
			out[i] = bpf.LoadConstant{Dst: bpf.RegA, Val: 0}
		}
	}
	return out
}

func vmVerdict(t testing.TB, vm *bpf.VM, b []byte) bool {
	n, err := vm.Run(b)
	if err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// kernelVerdict runs the program in the kernel's classic BPF interpreter
// or JIT: attached to one end of a datagram socketpair, a frame the
// program refuses is dropped silently, so the receiver finds nothing.
type kernelSock struct{ rx, tx int }

func newKernelSock(t testing.TB, prog []bpf.Instruction) *kernelSock {
	raw, err := cbpf.Raw(prog)
	if err != nil {
		t.Fatal(err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	k := &kernelSock{rx: fds[0], tx: fds[1]}
	t.Cleanup(func() { unix.Close(k.rx); unix.Close(k.tx) })
	sf := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		sf[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fp := unix.SockFprog{Len: uint16(len(sf)), Filter: &sf[0]}
	if err := unix.SetsockoptSockFprog(k.rx, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fp); err != nil {
		t.Fatalf("SO_ATTACH_FILTER: %v", err)
	}
	return k
}

func (k *kernelSock) verdict(t testing.TB, b []byte) bool {
	if _, err := unix.Write(k.tx, b); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	n, err := unix.Read(k.rx, buf)
	if errors.Is(err, unix.EAGAIN) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// pacer keeps the program loads of this package's tests at a sane pace.
var pacer steerfuzz.Pacer

// differential checks that the classic program (in the Go VM, and in the
// kernel when kernel is set) and the eBPF steering program (in the kernel,
// BPF_PROG_TEST_RUN) give every frame the same verdict, and that both
// compilers refuse the same filters.
func differential(t *testing.T, fs [][]byte, f packetio.SteeringFilter, kernel bool) {
	if !f.Promiscuous && len(f.Match) == 0 {
		return // the zero filter reads the interface: see TestZeroFilter
	}
	prog, cerr := cbpf.Compile(f)
	m, eerr := filter.Steering(f, func() ([][6]byte, error) { return nil, errors.New("no interface") })
	if (cerr == nil) != (eerr == nil) {
		t.Fatalf("%v: classic compiler says %v, eBPF compiler %v", f, cerr, eerr)
	}
	if cerr != nil {
		if !errors.Is(cerr, packetio.ErrUnsupported) {
			t.Fatalf("%v: refusal %v does not wrap ErrUnsupported", f, cerr)
		}
		return
	}
	vm, err := bpf.NewVM(vmProgram(prog))
	if err != nil {
		t.Fatalf("%v: the VM refuses the program: %v", f, err)
	}
	pacer.Wait()
	c, err := filter.NewClassifier(filter.Program{Matches: []filter.Match{m}})
	if err != nil {
		t.Fatalf("%v: the eBPF program does not load: %v", f, err)
	}
	defer c.Close()
	var k *kernelSock
	if kernel {
		k = newKernelSock(t, prog)
	}
	for i, b := range fs {
		want, err := c.Match(b)
		if err != nil {
			if len(b) < 14 {
				continue
			}
			t.Fatal(err)
		}
		if got := vmVerdict(t, vm, b); got != want {
			t.Fatalf("filter %q, frame %d (% x): classic BPF (VM) says %v, eBPF %v", f, i, b, got, want)
		}
		if k != nil {
			if got := k.verdict(t, b); got != want {
				t.Fatalf("filter %q, frame %d (% x): classic BPF (kernel) says %v, eBPF %v", f, i, b, got, want)
			}
		}
	}
}

var seeds = [][]byte{
	{6, 1}, {7, 0}, {6, 0, 6, 3}, {1, 0, 6, 1}, {4, 0, 5, 2}, {0, 0, 3, 2}, {2, 0, 1, 1},
	{3, 1, 4, 3}, {5, 3, 6, 2}, {2, 2, 0, 1}, {1, 1, 2, 1, 3, 0}, {4, 1, 5, 0, 6, 1, 7, 0},
	{8, 0}, {8, 0, 1, 0}, {6, 0, 7, 2}, {4, 2, 6, 1}, {5, 1, 3, 2}, {2, 1, 4, 3, 7, 1},
	{0, 1, 0, 0, 1, 0, 1, 1}, {6, 0, 6, 1, 6, 2, 6, 3}, {3, 0}, {3, 2, 2, 2},
}

// TestDifferential runs the seed filters through both compilers, the
// classic program both in the Go VM and in the kernel.
func TestDifferential(t *testing.T) {
	testenv.NeedBPF(t)
	_ = rlimit.RemoveMemlock()
	fs := frames(t)
	for _, s := range seeds {
		differential(t, fs, steerfuzz.Filter(s, true), true)
	}
}

// FuzzDifferential compares the classic and eBPF steering programs on
// fuzzed filters (run with -parallel 1: every input loads an eBPF program,
// paced to 50 a second). Every 16th input also runs the classic program in
// the kernel.
func FuzzDifferential(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	var fs [][]byte
	n := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		testenv.NeedBPF(t)
		_ = rlimit.RemoveMemlock()
		if fs == nil {
			fs = frames(t)
		}
		n++
		differential(t, fs, steerfuzz.Filter(data, true), n%16 == 0)
	})
}

// TestZeroFilter: the zero filter takes what the kernel addressed to this
// host (unicast to it, broadcast, multicast) and nothing else.
func TestZeroFilter(t *testing.T) {
	prog, err := cbpf.Compile(packetio.SteeringFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ins  bpf.Instruction
		want bool
	}{{bpf.LoadConstant{Val: 0}, true}, {bpf.LoadConstant{Val: 1}, true}, {bpf.LoadConstant{Val: 2}, true}, {bpf.LoadConstant{Val: 3}, false}, {bpf.LoadConstant{Val: 4}, false}} {
		p := append([]bpf.Instruction{c.ins}, prog[1:]...)
		vm, err := bpf.NewVM(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := vmVerdict(t, vm, make([]byte, 60)); got != c.want {
			t.Errorf("packet type %v: got %v, want %v", c.ins, got, c.want)
		}
	}
}

// TestRefusals: what the contract refuses, the compiler refuses, before
// any program exists.
func TestRefusals(t *testing.T) {
	for name, f := range map[string]packetio.SteeringFilter{
		"port without protocol": {Match: []packetio.Match{{Kind: packetio.MatchKindDstPort, Port: 9}}},
		"two protocols":         {Match: append(packetio.MatchDstPort(packetio.IPProtoUDP, 9), packetio.MatchIPProto(packetio.IPProtoTCP))},
		"promiscuous and match": {Promiscuous: true, Match: []packetio.Match{packetio.MatchEtherType(0x88b5)}},
		"unknown kind":          {Match: []packetio.Match{{Kind: 0}}},
		"two families":          {Match: []packetio.Match{packetio.MatchEtherType(0x0800), packetio.MatchDstIP(netip.MustParsePrefix("2001:db8::/32"))}},
		"port on ARP":           {Match: append(packetio.MatchDstPort(packetio.IPProtoUDP, 9), packetio.MatchEtherType(0x0806))},
		"port on GRE":           {Match: []packetio.Match{{Kind: packetio.MatchKindDstPort, IPProto: 47, Port: 9}}},
	} {
		if prog, err := cbpf.Compile(f); !errors.Is(err, packetio.ErrUnsupported) || prog != nil {
			t.Errorf("%s: got %d instructions, %v; want ErrUnsupported", name, len(prog), err)
		}
	}
}
