//go:build pcap

package pcapfilter

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcap"
	"golang.org/x/net/bpf"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter/bpfmatch/bpfmatchtest"
	libpcapc "github.com/packetio/packetio/filter/pcapfilter/internal/libpcap"
)

// These tests compare this package with libpcap itself (cgo, libpcap-dev),
// compiling on a dead DLT_EN10MB handle with snaplen 65535 and the
// optimiser on, which is what gopacket's pcap.CompileBPFFilter does. The
// programs differ; the verdicts, run in golang.org/x/net/bpf's VM over the
// frame corpus, must not. Run them with -tags pcap.

// libpcap compiles expr with libpcap, optimised, through gopacket.
func libpcap(expr string) ([]bpf.Instruction, error) {
	raw, err := pcap.CompileBPFFilter(layers.LinkTypeEthernet, 65535, expr)
	if err != nil {
		return nil, err
	}
	out := make([]bpf.RawInstruction, len(raw))
	for i, r := range raw {
		out[i] = bpf.RawInstruction{Op: r.Code, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return forVM(out), nil
}

// libpcapUnoptimised compiles expr with libpcap's optimiser off.
func libpcapUnoptimised(expr string) ([]bpf.Instruction, error) {
	raw, err := libpcapc.Compile(expr, false)
	if err != nil {
		return nil, err
	}
	return forVM(raw), nil
}

// forVM decodes libpcap's program for the reference VM. A constant index
// folded below zero becomes an absolute load at 2^31 or beyond, which
// libpcap's own interpreter fails like any load past the end;
// golang.org/x/net/bpf would decode it as a Linux ancillary load.
func forVM(raw []bpf.RawInstruction) []bpf.Instruction {
	out := make([]bpf.Instruction, len(raw))
	for i, r := range raw {
		out[i] = r.Disassemble()
		if sz, ok := map[uint16]int{0x20: 4, 0x28: 2, 0x30: 1}[r.Op]; ok && r.K >= 1<<31 {
			out[i] = bpf.LoadAbsolute{Off: r.K, Size: sz}
		}
	}
	return out
}

// libpcapExpressions are compared on every frame of the corpus.
var libpcapExpressions = []string{
	"",
	"ip", "ip6", "arp", "rarp", "tcp", "udp", "icmp", "icmp6", "sctp", "igmp",
	"tcp port 22", "udp port 53", "port 53", "port 53 or 80", "tcp port 22 or 80 or 443",
	"dst or src host 10.0.0.1 and ((10))", "port 22 or ((80))", "port ((22)) or (80 or ((443)))",
	"host 10.0.0.1 or (10.0.0.2 or ((3)))", "vlan ((7))",
	"src port 1000", "dst port 22", "src or dst port 53", "src and dst port 53",
	"tcp dst port 443 and ip6", "udp src port 53 and not dst port 1000",
	"portrange 1000-2000", "tcp portrange 20-30", "udp dst portrange 1400-1600", "portrange 2000-1000",
	"host 10.0.0.1", "host 10.0.0.1 or 192.0.2.1", "src host 10.0.0.1", "dst host 192.0.2.1 and tcp",
	"src and dst host 10.0.0.1", "host 10.0.0.1 and host 10.0.0.2",
	"net 10.0.0.0/8", "net 192.168.0.0/16 or net 192.0.2.0/24", "src net 10.0.0.0 mask 255.0.0.0",
	"net 10", "dst net 192.168", "host 10.0.0", "ip host 10.0.0.1", "arp host 10.0.0.1", "rarp src host 192.168.1.10",
	"host 2001:db8::1", "ip6 src host 2001:db8::1", "net 2001:db8::/32", "ip6 dst net 2001:db8:1::/48", "net fe80::/10",
	"host ::1", "dst net ff00::/8",
	"ether host 02:00:00:00:00:01", "ether src 02:00:00:00:00:01", "ether dst ff:ff:ff:ff:ff:ff",
	"ether host 02-00-00-00-00-02", "ether src 0200.0000.0001 and ether dst 02:00:00:00:00:02",
	"ether broadcast", "ether multicast", "broadcast", "multicast", "ip multicast", "ip6 multicast",
	"ether proto 0x88cc", "ether proto \\ip", "ether proto \\arp", "ether proto 0x42", "ether proto 6", "link proto 0x9000",
	"proto 17", "ip proto 6", "ip6 proto 17", "ip proto \\udp", "proto \\icmp", "ip6 proto 44", "ip proto gre",
	"vlan", "vlan 100", "vlan 100 and tcp port 22", "vlan and vlan 10", "vlan 5 and vlan 100 and udp",
	"vlan 100 and ip", "not vlan", "vlan 100 or arp", "vlan and host 10.0.0.1", "vlan 100 and ether host 02:00:00:00:00:01",
	"vlan (200)", "vlan 4095 or vlan 0",
	"greater 100", "less 60", "len > 70", "len = 60", "len <= 60 and udp", "greater 61 and less 90",
	"tcp[tcpflags] & tcp-syn != 0", "tcp[tcpflags] & (tcp-syn|tcp-ack) = tcp-syn", "tcp[13] = 18",
	"tcp[tcpflags] & (tcp-rst|tcp-fin) != 0", "tcp[tcpflags] & tcp-urg != 0 or tcp[tcpflags] & tcp-ece != 0",
	"icmp[icmptype] = icmp-echo", "icmp[icmptype] != icmp-echo and icmp[icmptype] != icmp-echoreply",
	"icmp6[icmp6type] = icmp6-echo", "icmp6[0] = 135",
	"ip[0] & 0xf > 5", "ip[8] < 64", "ip[6:2] & 0x1fff != 0", "ip[2:2] > 40",
	"udp[8] & 0x08 != 0 and udp[11:4] & 0x00ffffff = 4242",
	"tcp[((tcp[12:1] & 0xf0) >> 2):4] = 0x68656c6c",
	"tcp and (ip[2:2] - ((ip[0]&0xf)<<2) - ((tcp[12]&0xf0)>>2)) != 0",
	"ether[0] & 1 = 0", "ether[12:2] = 0x8100", "ip6[6] = 17", "arp[6:2] = 1", "rarp[7] = 3",
	"udp[4:2] / 2 > 10", "ip[8] % 7 = 1", "ip[1] * 3 + 1 > 2", "ip[0] ^ 0x40 = 5", "ip[0] & 1 ^ 3 = 0",
	"ip[0] | 1 << 2 = 0x45", "ip[0] - 0x40 = 5", "-ip[8] < 0xffffffc0", "len - 14 > 40",
	"ip[ip[0] & 0xf] = 0", "tcp[ip[0] & 3] != 0", "udp[100] = 1", "ip[65530] = 1", "ip[0x7ffffff0] = 1",
	"ip[0] / (ip[1] & 3) = 5", "ip[0] << (ip[1] & 0x3f) = 0", "ip[0] >> ip[1] = 0", "ip[1] = ip[1]",
	"tcp[13] & 0 = 0", "0 / ip[1] = 0", "1 + tcp[0] = 1", "ip[0] + ip6[0] = 1",
	"(5) = 5", "(ip[0]) = 0x45", "(ip[0] + 1) = 0x46", "ip[0] << (16+16) = 0",
	"not tcp", "! udp", "not (tcp or udp)", "tcp and not port 22", "not ip and not ip6 and not arp",
	"tcp or udp and port 53", "tcp || udp && port 53", "(tcp or udp) and (port 53 or port 22)",
	"host 10.0.0.1 and (port 22 or 53)", "host 10.0.0.1 and not (192.0.2.1 or 10.0.0.2)",
	"not host 10.0.0.1 or 10.0.0.2", "port 22 and not 1000", "tcp port 22 and not src host 192.0.2.1",
	"host 192.0.2.1 or (tcp) or 10.0.0.2", "src 10.0.0.1", "dst 192.0.2.1 or 192.0.2.2",
	"ip and arp", "ip[ip6[0]] = 1", "tcp and udp",
	// Folds that libpcap's optimiser gets wrong (TestLibpcapFoldReference).
	"ether[0:2] + ether[0:2] == -0 * tcp[0:2] / ip[1] or portrange 22-22",
	"ether[0:2] == --0 / ip[1] or tcp[0:2] == ether[0:2] or portrange 22-22",
	"ether[0:2] == --0 / ip[1] or tcp[0:2] == ---0 or portrange 22-22",
	"-ether[0:4] == -0 * tcp[0:2] / ip[1] or tcp[13] + ---0 = ether[ether[ether[0]]]",
	"ether[0:2] == ip[0:2] & 0 << 0 / ip[1] or tcp[0:2] == ether[0:2] or portrange 22-22",
	// libpcap refuses a "negative" k or X in an indexed load whose 32-bit
	// address is in the frame (wrappedIndex).
	"tcp[13] + -0 & 0 & 0x45 != ether[-4 + len:2]",
	"ip[-1] + -0 + 0 == ether[-4 + len:2]",
}

func TestLibpcapComparison(t *testing.T) {
	frames := bpfmatchtest.Frames()
	st := stats{exprs: map[string]int{}}
	defer func() {
		for k, v := range st.exprs {
			t.Logf("\t%d on %q", v, k)
		}
	}()
	for _, expr := range libpcapExpressions {
		compareWithLibpcap(t, expr, frames, &st)
	}
	t.Logf("%d expressions x %d frames: %d verdicts compared; on %d libpcap's optimiser changes libpcap's verdict and ours is the unoptimised one; on %d a fold dropped an operand and ours is libpcap's unoptimised program of the folded text; on %d libpcap refuses an indexed load whose 32-bit address is in the frame (not compared)",
		len(libpcapExpressions), len(frames), st.verdicts, st.optDiff, st.folded, st.wrapped)
	if len(libpcapExpressions) < 40 {
		t.Errorf("only %d expressions", len(libpcapExpressions))
	}
}

// stats counts what the comparisons saw.
type stats struct {
	verdicts int // frames compared
	optDiff  int // frames where libpcap's optimiser changes libpcap's verdict and ours is unoptimised libpcap's
	arithErr int // expressions where one side refuses a computed division by zero or shift over 31
	unsetX   int // expressions whose optimised libpcap program reads X or a scratch slot before setting it
	folded   int // frames where libpcap's unoptimised program of the folded text is ours and both of libpcap's are not
	wrapped  int // frames where libpcap refuses an indexed load whose 32-bit address is in the frame (wrappedIndex)
	names    map[string]int
	exprs    map[string]int
}

// optimiserArith reports whether err is one libpcap's optimiser raises
// for a computed constant.
func optimiserArith(err error) bool {
	for _, s := range []string{"division by zero", "modulus by zero", "shift by more than 31 bits"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// compareWithLibpcap compiles expr both ways and compares the verdicts
// frame by frame. Ours must be libpcap's; where libpcap's optimiser
// changes libpcap's own verdict (it drops loads a short packet would fail,
// and has bugs: see TestLibpcapOptimiserBug), ours may be that of
// libpcap's unoptimised program instead.
func compareWithLibpcap(t testing.TB, expr string, frames []bpfmatchtest.Frame, st *stats) {
	t.Helper()
	theirs, terr := libpcap(expr)
	ours, folds, oerr := compileFolds(expr)
	switch {
	case terr != nil && oerr != nil:
		return
	case oerr != nil && strings.Contains(oerr.Error(), "rejects all packets"):
		// Our folding proves it where libpcap's optimiser leaves a
		// program that never matches: the verdicts still agree.
		o, err := bpfmatchtest.NewOracle(theirs)
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		for _, f := range frames {
			if ok, _ := o.Match(f.Data); ok {
				t.Errorf("%q: we say it rejects all packets; libpcap's program matches %s", expr, f.Name)
				return
			}
		}
		st.verdicts += len(frames)
		return
	case oerr != nil && optimiserArith(oerr):
		// Whether libpcap reports a division by a computed zero (or
		// a shift by a computed 32) depends on how far its optimiser
		// gets before it sees the test; ours follows it closely, not
		// exactly.
		st.arithErr++
		return
	case oerr != nil:
		t.Errorf("%q: libpcap compiles it, we say %v", expr, oerr)
		return
	case terr != nil && strings.Contains(terr.Error(), "rejects all packets"):
		// libpcap's optimiser proves it; ours need not, but must agree,
		// unless the proof is the optimiser's own bug: then libpcap's
		// unoptimised program matches where ours does
		// (TestLibpcapJsetAllOnes).
		o, err := bpfmatchtest.NewOracle(ours)
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		var o0 *bpfmatchtest.Oracle
		for _, f := range frames {
			st.verdicts++
			if ok, _ := o.Match(f.Data); !ok {
				continue
			}
			if o0 == nil {
				o0 = unoptimisedOracle(t, expr)
			}
			if w0, err := o0.Match(f.Data); err != nil || !w0 {
				t.Errorf("%q: libpcap says it rejects all packets; ours matches %s (libpcap's unoptimised program: %v, %v)", expr, f.Name, w0, err)
				return
			}
			st.optDiff++
		}
		return
	case terr != nil && optimiserArith(terr):
		// The same the other way round: compare with libpcap's
		// unoptimised program, which has no such error.
		st.arithErr++
		theirs, terr = libpcapUnoptimised(expr)
		if terr != nil {
			t.Errorf("%q: unoptimised libpcap: %v", expr, terr)
			return
		}
	case terr != nil:
		t.Errorf("%q: libpcap refuses it (%v); we compile it%s", expr, terr, listing(ours))
		return
	}
	if at, ok := readsUnsetX(theirs); ok {
		// libpcap's optimiser dropped the instruction that set X (with
		// the load it folded away) and kept a use of it, or its code
		// generator skipped a scratch store: its program is wrong, and
		// its unoptimised one keeps what the folds drop
		// (TestLibpcapUnsetX) or reads the same slot. Neither is a
		// reference here. (Nor, in general, is the unoptimised program
		// of the folded text: it makes every load of an address that
		// a mask makes irrelevant; TestLibpcapUnsetScratch.)
		st.unsetX++
		t.Logf("%q: libpcap's optimised program reads X or a scratch slot unset at %d: not compared", expr, at)
		return
	}
	ot, err := bpfmatchtest.NewOracle(theirs)
	if err != nil {
		t.Fatalf("%q: libpcap's program: %v", expr, err)
	}
	oo, err := bpfmatchtest.NewOracle(ours)
	if err != nil {
		t.Fatalf("%q: our program: %v%s", expr, err, listing(ours))
	}
	var o0 *bpfmatchtest.Oracle // libpcap unoptimised, when needed
	var of *bpfmatchtest.Oracle // libpcap unoptimised of the folded text, when needed
	bad := 0
	for _, f := range frames {
		want, err1 := ot.Match(f.Data)
		got, err2 := oo.Match(f.Data)
		if err1 != nil || err2 != nil {
			t.Fatalf("%q: %v, %v", expr, err1, err2)
		}
		st.verdicts++
		if got == want {
			continue
		}
		if o0 == nil {
			if p0, err := libpcapUnoptimised(expr); err == nil {
				if o0, err = bpfmatchtest.NewOracle(p0); err != nil {
					t.Fatalf("%q: libpcap's unoptimised program: %v", expr, err)
				}
			}
		}
		if o0 != nil {
			if w0, err := o0.Match(f.Data); err == nil && w0 == got {
				st.optDiff++
				if st.names != nil {
					st.names[strings.Fields(f.Name)[0]]++
				}
				if st.exprs != nil {
					st.exprs[expr]++
				}
				continue
			}
		}
		if of == nil && len(folds) > 0 {
			of = foldedOracle(t, expr, folds)
		}
		if of != nil {
			// Where a fold dropped an operand, libpcap's optimiser is
			// no reference (it can lose the IPv4 header length in X
			// with the dropped load: TestLibpcapFoldReference), and its
			// unoptimised program computes what the fold drops. The reference is libpcap's unoptimised
			// program of the expression with each fold's 0 written
			// in: the fold's meaning, in libpcap's own code.
			if w, err := of.Match(f.Data); err == nil && w == got {
				st.folded++
				continue
			}
		}
		if got && !want && wrappedIndex(t, expr, theirs, f.Data) {
			st.wrapped++
			continue
		}
		bad++
		if bad == 1 {
			ref := ""
			if text, ok := foldedText(expr, folds); ok && of != nil {
				ref = fmt.Sprintf(", and libpcap's unoptimised program of the folded %q", text)
			}
			t.Errorf("%q: %s: ours %v, libpcap %v (optimised and not%s)\n\tframe %s\nours:%s\nlibpcap:%s", expr, f.Name, got, want, ref, hex.EncodeToString(f.Data), listing(ours), listing(theirs))
		}
		continue
	}
	if bad > 1 {
		t.Errorf("%q: %d disagreements", expr, bad)
	}
}

// TestLibpcapErrors checks that what libpcap refuses, this package refuses
// too (the messages differ, and carry a column here).
func TestLibpcapErrors(t *testing.T) {
	for _, expr := range []string{
		"port 70000", "portrange 1000-70000", "vlan 4096", "ip[1:3] = 1", "ip[0] / 0 = 1", "ip[0] % 0 = 1",
		"ip[0] << 32 = 1", "host 10.0.0.1/8", "net 10.0.0.1/8", "net 10.0.0.0/33", "net ::/129", "host ::/64",
		"net ::1/64", "ip host ::1", "ip6 host 10.0.0.1", "tcp host 10.0.0.1", "ip6 port 80", "port 53 and 10.0.0.1",
		"ether host 10.0.0.1", "host 02:00:00:00:00:01", "ip broadcast", "tcp or 80", "ip and", "port", "not",
		"TCP port 22", "ip proto tcp", "ip[0] = 5-3", "foo", "(", ")", "tcp)", "ip[0", "ip[0] =", "= 1", "port 08",
		"port 4294967296", "src proto 6", "arp proto 6", "tcp proto 6", "net 10 mask 255.0.0.0",
		"net 10.0.0.0 mask 255", "host 10.0.0.0 mask 255.0.0.0", "net 10.1.2.3 mask 255.0.0.0",
		"src port 53 proto 6", "less", "greater x", "vlan 1 or 2", "udp[8:8]", "ip proto \\foo",
		"host 10.0.0.1 and ((10.0.0.2))", "port 22 or ((80) 443)",
	} {
		_, terr := libpcap(expr)
		_, oerr := Compile(expr)
		if terr == nil {
			t.Errorf("%q: libpcap compiles it", expr)
		}
		if oerr == nil {
			t.Errorf("%q: libpcap refuses it (%v), we compile it", expr, terr)
		} else if errors.Is(oerr, packetio.ErrUnsupported) {
			t.Errorf("%q: %v claims ErrUnsupported for an invalid expression", expr, oerr)
		}
	}
}

// TestLibpcapRandom compares seeded random expressions from the fuzz
// grammar.
func TestLibpcapRandom(t *testing.T) {
	frames := bpfmatchtest.Frames()
	r := rand.New(rand.NewPCG(3, 4))
	st := stats{names: map[string]int{}}
	defer func() {
		for k, v := range st.names {
			t.Logf("\tof which %d on %s frames", v, k)
		}
	}()
	count := 10000
	if testing.Short() {
		count = 300
	}
	for range count {
		b := make([]byte, 64)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		compareWithLibpcap(t, generateExpr(b), frames, &st)
	}
	t.Logf("%d random expressions: %d verdicts compared; on %d libpcap's optimiser changes libpcap's verdict and ours is the unoptimised one; %d expressions where one side refuses a computed division by zero or shift",
		count, st.verdicts, st.optDiff, st.arithErr)
	t.Logf("%d verdicts where a fold dropped an operand and ours is libpcap's unoptimised program of the folded text; not compared: %d expressions whose optimised libpcap program reads X or a scratch slot unset, %d frames where libpcap refuses an indexed load whose 32-bit address is in the frame", st.folded, st.unsetX, st.wrapped)
}

// FuzzLibpcap generates expressions from a small grammar and compares the
// verdicts of this package's programs with libpcap's in the reference VM
// on a sample of the frame corpus. Nothing is loaded into the kernel, so
// there is no rate limit:
//
//	go test -tags pcap -run XXX -fuzz FuzzLibpcap -fuzztime 30s ./filter/pcapfilter/
func FuzzLibpcap(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 32 {
		b := make([]byte, 48)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
	all := bpfmatchtest.Frames()
	var sample []bpfmatchtest.Frame
	for i := 0; i < len(all); i += 3 {
		sample = append(sample, all[i])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		compareWithLibpcap(t, generateExpr(data), sample, &stats{})
	})
}

// foldedText is expr with the outermost exact folds each replaced by "0":
// the expression libpcap's unoptimised program reads as ours reads expr.
// A fold that is not exact (its 0 keeps the protocol condition of the
// operand it dropped, which no number can say) stays as written, with the
// exact folds inside it replaced: libpcap's unoptimised program then
// computes the operand ours drops, so the reference is right where that
// operand loads and divides without fault and stricter where it does not.
// ok is false when no fold is replaced (the text would be expr).
func foldedText(expr string, folds []folded) (text string, ok bool) {
	outer := slices.Clone(folds)
	slices.SortFunc(outer, func(a, b folded) int { // by start, the enclosing first
		if a.from != b.from {
			return a.from - b.from
		}
		return b.to - a.to
	})
	var out strings.Builder
	at := 0
	for _, f := range outer {
		if f.from < at || !f.exact {
			continue // inside the fold before it, or kept as written
		}
		out.WriteString(expr[at:f.from])
		out.WriteString("0 ")
		at = f.to
		ok = true
	}
	out.WriteString(expr[at:])
	return out.String(), ok
}

// wrappedIndex reports whether libpcap refuses frame only because its
// interpreter refuses an indexed load whose offset k or index X alone is
// past the frame though their sum, in 32 bits, is in it: libpcap's
// optimiser moves a constant of the index into k ("ether[-4 + len:2]"
// becomes ldh [x + 0xfffffffc] with X = len), its code generator leaves a
// "negative" index in X ("ip[-1]": ldb [x + 14] with X = 0xffffffff), and
// libpcap's bpf_filter, the kernel's and x/net/bpf's VM all refuse such a
// load. Ours computes the index in 32 bits, as the expression's arithmetic
// is computed, and loads from the sum. The reference is then either of
// libpcap's programs with every indexed load's address computed in 32
// bits (wrapLoads).
func wrappedIndex(t testing.TB, expr string, optimised []bpf.Instruction, frame []byte) bool {
	t.Helper()
	match := matcher(t, frame)
	progs := [][]bpf.Instruction{optimised}
	if p0, err := libpcapUnoptimised(expr); err == nil {
		progs = append(progs, p0)
	}
	for _, p := range progs {
		if w, ok := wrapLoads(p); ok && match(w, nil) {
			return true
		}
	}
	return false
}

// wrapLoads rewrites every indexed load [x + k] of p (k != 0) to compute
// its address in 32 bits first: X is kept in a scratch slot p does not
// use, A takes X + k, X takes A, the load reads [x + 0], and X comes back
// from the slot (A is the load's, as before). Jumps are moved to their
// targets' new places. It reports false when p uses every scratch slot or
// a conditional jump would grow past 255.
func wrapLoads(p []bpf.Instruction) ([]bpf.Instruction, bool) {
	var used [16]bool
	for _, ins := range p {
		switch in := ins.(type) {
		case bpf.LoadScratch:
			used[in.N] = true
		case bpf.StoreScratch:
			used[in.N] = true
		}
	}
	slot := slices.Index(used[:], false)
	if slot < 0 {
		return nil, false
	}
	const grown = 6             // stx, txa, add, tax, ld [x + 0], ldx
	at := make([]int, len(p)+1) // the new place of each instruction
	for i, ins := range p {
		at[i+1] = at[i] + 1
		if li, ok := ins.(bpf.LoadIndirect); ok && li.Off != 0 {
			at[i+1] = at[i] + grown
		}
	}
	// skip is the new length of a jump at i over s instructions; branch
	// that of a conditional jump's two, false when one outgrows a byte.
	skip := func(i, s int) int { return at[i+1+s] - at[i] - 1 }
	branch := func(i int, t, f uint8) (uint8, uint8, bool) {
		nt, nf := skip(i, int(t)), skip(i, int(f))
		return uint8(nt), uint8(nf), nt <= 255 && nf <= 255
	}
	var ok bool
	out := make([]bpf.Instruction, 0, at[len(p)])
	for i, ins := range p {
		switch in := ins.(type) {
		case bpf.LoadIndirect:
			if in.Off != 0 {
				out = append(out, bpf.StoreScratch{Src: bpf.RegX, N: slot}, bpf.TXA{}, bpf.ALUOpConstant{Op: bpf.ALUOpAdd, Val: in.Off},
					bpf.TAX{}, bpf.LoadIndirect{Off: 0, Size: in.Size}, bpf.LoadScratch{Dst: bpf.RegX, N: slot})
				continue
			}
		case bpf.Jump:
			in.Skip = uint32(skip(i, int(in.Skip)))
			ins = in
		case bpf.JumpIf:
			if in.SkipTrue, in.SkipFalse, ok = branch(i, in.SkipTrue, in.SkipFalse); !ok {
				return nil, false
			}
			ins = in
		case bpf.JumpIfX:
			if in.SkipTrue, in.SkipFalse, ok = branch(i, in.SkipTrue, in.SkipFalse); !ok {
				return nil, false
			}
			ins = in
		}
		out = append(out, ins)
	}
	return out, true
}

// TestWrapLoads: the rewritten program computes an indexed load's address
// in 32 bits (a frame the original refuses at ldb [x + 15] with X =
// 0xffffffff is read at byte 14), keeps every other verdict, lands every
// jump, conditional or not, across a grown load where it landed before,
// and is refused when the program leaves no scratch slot free.
func TestWrapLoads(t *testing.T) {
	p := []bpf.Instruction{
		bpf.LoadConstant{Dst: bpf.RegX, Val: 14},
		bpf.LoadIndirect{Off: 9, Size: 1}, // the IPv4 protocol
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 17, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 6, SkipFalse: 5}, // neither: drop
		bpf.Jump{Skip: 3}, // TCP: take it
		bpf.LoadConstant{Dst: bpf.RegX, Val: 0xffffffff},
		bpf.LoadIndirect{Off: 15, Size: 1}, // byte 14 in 32 bits
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x45, SkipFalse: 1},
		bpf.RetConstant{Val: 1},
		bpf.RetConstant{Val: 0},
	}
	w, ok := wrapLoads(p)
	if !ok {
		t.Fatal("wrapLoads refused a program with free scratch slots")
	}
	if want := len(p) + 2*5; len(w) != want {
		t.Fatalf("wrapped program has %d instructions, want %d:\n%v", len(w), want, w)
	}
	// Bytes 14 and 23 are what the program reads. A jump that lands
	// inside a grown load reads elsewhere: 0x45 everywhere but byte 21
	// makes the branch past both loads (landing on tax with the protocol
	// in A, it reads byte 1) take the frame and the jump over the second
	// (landing on add #15 with A = 6, it reads byte 21) drop it, each the
	// opposite of its right verdict.
	frame := func(proto byte) []byte {
		f := bytes.Repeat([]byte{0x45}, 60)
		f[21], f[23] = 0, proto
		return f
	}
	for _, tc := range []struct {
		name          string
		frame         []byte
		orig, wrapped bool
	}{
		{"UDP: the wrapped load reads byte 14", frame(17), false, true},
		{"TCP: the jump over the second load", frame(6), true, true},
		{"ICMP: the branch past both", frame(1), false, false},
	} {
		match := matcher(t, tc.frame)
		if got := match(p, nil); got != tc.orig {
			t.Errorf("%s: original %v, want %v", tc.name, got, tc.orig)
		}
		if got := match(w, nil); got != tc.wrapped {
			t.Errorf("%s: wrapped %v, want %v", tc.name, got, tc.wrapped)
		}
	}
	full := make([]bpf.Instruction, 0, 18)
	for n := range 16 {
		full = append(full, bpf.StoreScratch{Src: bpf.RegA, N: n})
	}
	full = append(full, bpf.LoadIndirect{Off: 1, Size: 1}, bpf.RetA{})
	if _, ok := wrapLoads(full); ok {
		t.Error("wrapLoads rewrote a program that uses every scratch slot")
	}
}

// foldedOracle runs libpcap's unoptimised program of expr's folded text,
// or is nil when there is none (a fold that is not exact, or a text
// libpcap refuses).
func foldedOracle(t testing.TB, expr string, folds []folded) *bpfmatchtest.Oracle {
	t.Helper()
	text, ok := foldedText(expr, folds)
	if !ok {
		return nil
	}
	p, err := libpcapUnoptimised(text)
	if err != nil {
		return nil
	}
	o, err := bpfmatchtest.NewOracle(p)
	if err != nil {
		t.Fatalf("%q: libpcap's unoptimised program of %q: %v", expr, text, err)
	}
	return o
}

// TestLibpcapFoldReference pins the libpcap 1.10 optimiser bugs
// FuzzLibpcap found where a fold drops an operand: libpcap's optimised
// program then reads the destination port of "portrange 22-22" from the
// wrong place (at [x + 16] with X holding ether[0:2], or at [16] with no
// header length at all), and its unoptimised program refuses the frame
// for dividing by ip[1], which is 0 (the fold of 0 / ip[1] drops that
// division, in libpcap's optimiser as in ours). On a SYN to port 22 ours
// matches, and so does libpcap's unoptimised program of the folded text,
// the comparison's reference in such cases.
func TestLibpcapFoldReference(t *testing.T) {
	frame, _ := hex.DecodeString("02000000000202000000000108004500002d00074000400626c20a0000010a00000203e800160000000100000002500204005008000068656c6c6f00")
	match := matcher(t, frame)
	for _, tc := range []struct{ expr, folded string }{
		{"ether[0:2] + ether[0:2] == -0 * tcp[0:2] / ip[1] or portrange 22-22", "ether[0:2] + ether[0:2] == 0 or portrange 22-22"},
		{"ether[0:2] == --0 / ip[1] or tcp[0:2] == ether[0:2] or portrange 22-22", "ether[0:2] == 0 or tcp[0:2] == ether[0:2] or portrange 22-22"},
		{"ether[0:2] == --0 / ip[1] or tcp[0:2] == ---0 or portrange 22-22", "ether[0:2] == 0 or tcp[0:2] == ---0 or portrange 22-22"},
		{"ip[0*ip[1]] == 0x45 and (0 / ip[1]) == 0", "ip[0 ] == 0x45 and (0 ) == 0"},
		// ip[0:2] & (0 << 0 / ip[1]) is 0 for IPv4 only: that fold
		// stays as written, the exact one inside it (0 / ip[1]) is
		// written in. libpcap's optimiser reads the port at [x + 16]
		// here too.
		{"ether[0:2] == ip[0:2] & 0 << 0 / ip[1] or tcp[0:2] == ether[0:2] or portrange 22-22", "ether[0:2] == ip[0:2] & 0 << 0 or tcp[0:2] == ether[0:2] or portrange 22-22"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			ours, folds, err := compileFolds(tc.expr)
			if !match(ours, err) {
				t.Errorf("ours does not match the SYN to port 22%s", listing(ours))
			}
			text, ok := foldedText(tc.expr, folds)
			if !ok || text != tc.folded {
				t.Fatalf("folded text %q (written %v), want %q", text, ok, tc.folded)
			}
			if !match(libpcapUnoptimised(text)) {
				t.Errorf("libpcap's unoptimised program of %q does not match", text)
			}
			opt, unopt := match(libpcap(tc.expr)), match(libpcapUnoptimised(tc.expr))
			t.Logf("libpcap's own programs of the expression: optimised %v, unoptimised %v (dividing by ip[1] = 0)", opt, unopt)
		})
	}
	// A fold whose 0 keeps the protocol condition of the operand it
	// dropped (the left one: ip[1] * 0 is 0 for IPv4 only) stays as
	// written, and with no other fold there is no text.
	if _, folds, err := compileFolds("ip[1] * 0 == 0"); err != nil || len(folds) != 1 || folds[0].exact {
		t.Errorf("ip[1] * 0: folds %+v, %v; want one fold, not exact", folds, err)
	} else if _, ok := foldedText("ip[1] * 0 == 0", folds); ok {
		t.Error("foldedText writes a 0 for ip[1] * 0")
	}
}

// successors calls visit with every instruction control can go to from
// instruction i (classic BPF jumps only forward; a return goes nowhere).
func successors(i int, ins bpf.Instruction, visit func(to int)) {
	switch in := ins.(type) {
	case bpf.RetA, bpf.RetConstant:
	case bpf.Jump:
		visit(i + 1 + int(in.Skip))
	case bpf.JumpIf:
		visit(i + 1 + int(in.SkipTrue))
		visit(i + 1 + int(in.SkipFalse))
	case bpf.JumpIfX:
		visit(i + 1 + int(in.SkipTrue))
		visit(i + 1 + int(in.SkipFalse))
	default:
		visit(i + 1)
	}
}

// matcher returns the verdict of a program (and the error it was compiled
// with, failing the test on either) on frame.
func matcher(t testing.TB, frame []byte) func([]bpf.Instruction, error) bool {
	return func(p []bpf.Instruction, err error) bool {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		o, err := bpfmatchtest.NewOracle(p)
		if err != nil {
			t.Fatal(err)
		}
		ok, err := o.Match(frame)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
}

// readsUnsetX reports whether some path through p reads X, or a scratch
// slot M[k], before any instruction sets it, and the first such
// instruction. libpcap's code generator always sets X first; only its
// optimiser can leave a read of X behind. Its register allocation can skip
// a scratch store in long arithmetic (FuzzLibpcap found "len ^ len + len ^
// len + ..." reading an M[k] it never stored, optimised or not): the
// program then computes with whatever the slot holds. Jumps in classic BPF
// go forward, so one pass in order sees every predecessor of an
// instruction before the instruction.
func readsUnsetX(p []bpf.Instruction) (int, bool) {
	// state[i]: what is set on every path reaching i (X, and a bit per
	// scratch slot); reached[i]: some path does.
	type state struct {
		x bool
		m uint16
	}
	set := make([]state, len(p)+1)
	reached := make([]bool, len(p)+1)
	reached[0] = true
	flow := func(to int, st state) {
		if to < 0 || to >= len(p) {
			return
		}
		if !reached[to] {
			reached[to], set[to] = true, st
			return
		}
		set[to] = state{set[to].x && st.x, set[to].m & st.m}
	}
	for i, ins := range p {
		if !reached[i] {
			continue
		}
		st := set[i]
		reads := false
		switch in := ins.(type) {
		case bpf.LoadIndirect, bpf.ALUOpX, bpf.JumpIfX, bpf.TXA:
			reads = !st.x
		case bpf.StoreScratch:
			reads = in.Src == bpf.RegX && !st.x
		case bpf.LoadScratch:
			reads = in.N >= 0 && in.N < 16 && st.m&(1<<in.N) == 0
		}
		if reads {
			return i, true
		}
		switch in := ins.(type) {
		case bpf.LoadMemShift, bpf.TAX:
			st.x = true
		case bpf.LoadConstant:
			st.x = st.x || in.Dst == bpf.RegX
		case bpf.LoadScratch:
			st.x = st.x || in.Dst == bpf.RegX
		case bpf.StoreScratch:
			if in.N >= 0 && in.N < 16 {
				st.m |= 1 << in.N
			}
		}
		successors(i, ins, func(to int) { flow(to, st) })
	}
	return 0, false
}

// TestLibpcapUnsetX pins the libpcap 1.10 optimiser bug FuzzLibpcap found:
// folding "0 * tcp[0:2]" away takes the IPv4 header length load with it,
// and a later tcp[13] is read at 14+13 with X still 0. Ours reads the TCP
// flags; libpcap's unoptimised program refuses the frame for dividing by
// ip[1], which is 0 here (the fold drops that division, in libpcap's
// optimiser as in ours).
func TestLibpcapUnsetX(t *testing.T) {
	const expr = "-ether[0:4] == -0 * tcp[0:2] / ip[1] or tcp[13] + ---0 = ether[ether[ether[0]]]"
	theirs, err := libpcap(expr)
	if err != nil {
		t.Fatal(err)
	}
	at, ok := readsUnsetX(theirs)
	t.Logf("libpcap's optimised program reads X unset: %v (at %d)%s", ok, at, listing(theirs))
	if !ok {
		t.Errorf("libpcap's program sets X before reading it: the bug is gone, drop the carve-out")
	}
	ours, err := Compile(expr)
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := readsUnsetX(ours); ok {
		t.Errorf("our program reads X unset at %d:%s", at, listing(ours))
	}
	// A SYN: tcp[13] is 2, and ether[ether[ether[0]]] is 2 as well.
	frame, _ := hex.DecodeString("02000000000202000000000108004500002d00074000400626c20a0000010a00000203e800160000000100000002500204005008000068656c6c6f00")
	o, err := bpfmatchtest.NewOracle(ours)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := o.Match(frame); err != nil || !ok {
		t.Errorf("ours: %v, %v; want a match (tcp[13] = 2 = ether[ether[ether[0]]])", ok, err)
	}
	for _, p := range [][]bpf.Instruction{{bpf.TAX{}, bpf.LoadIndirect{Off: 0, Size: 1}, bpf.RetA{}}, {bpf.LoadMemShift{Off: 14}, bpf.TXA{}, bpf.RetA{}}} {
		if _, bad := readsUnsetX(p); bad {
			t.Errorf("readsUnsetX flags a program that sets X first:%s", listing(p))
		}
	}
	if at, bad := readsUnsetX([]bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpEqual, Val: 1, SkipTrue: 1}, bpf.TAX{}, bpf.TXA{}, bpf.RetA{}}); !bad || at != 2 {
		t.Errorf("readsUnsetX misses X unset on the jump around TAX: %d, %v", at, bad)
	}
	stored := []bpf.Instruction{bpf.LoadConstant{Dst: bpf.RegA, Val: 1}, bpf.StoreScratch{Src: bpf.RegA, N: 9}, bpf.LoadScratch{Dst: bpf.RegA, N: 9}, bpf.RetA{}}
	if _, bad := readsUnsetX(stored); bad {
		t.Errorf("readsUnsetX flags a scratch slot read after its store:%s", listing(stored))
	}
	skipped := []bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpEqual, Val: 1, SkipTrue: 1}, bpf.StoreScratch{Src: bpf.RegA, N: 9}, bpf.LoadScratch{Dst: bpf.RegA, N: 9}, bpf.RetA{}}
	if at, bad := readsUnsetX(skipped); !bad || at != 2 {
		t.Errorf("readsUnsetX misses M[9] unset on the jump around its store: %d, %v", at, bad)
	}
}

// TestLibpcapUnsetScratch pins the libpcap 1.10 code-generation bug
// FuzzLibpcap found: in this expression libpcap's optimised program stores
// the operands of "len ^ len + ..." in scratch slots but skips M[9], then
// reads it. On the frame FuzzLibpcap found, a 46-byte IPv6 runt to
// 2001:db8:1::2, libpcap (optimised and not) says no and ours says yes;
// ours is libpcap's own answer piece by piece: its optimised program
// matches the address and its unoptimised one the parenthesised
// alternatives. The comparison leaves out expressions whose libpcap program reads
// a slot unset.
func TestLibpcapUnsetScratch(t *testing.T) {
	const alts = "len + -0 + 1 << 1 + 0 + 0 + -1 == -0 + 0 & len << 0 or sctp or ether[0:2] + --0 == -0 & len + 0 + 0 + 0 + 0 or ether[12:2] + --1 << 31 == len ^ len + len ^ len + len ^ len + len ^ len"
	const expr = "dst or src net 2001:db8:1::/48 and (" + alts + ")"
	frame, err := hex.DecodeString("02000000000202000000000186dd600000000016064020010db800000000000000000000000120010db800010000")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := libpcap(expr)
	if err != nil {
		t.Fatal(err)
	}
	at, ok := readsUnsetX(theirs)
	t.Logf("libpcap's optimised program reads a slot unset: %v (at %d)%s", ok, at, listing(theirs))
	if !ok {
		t.Errorf("libpcap's program stores every slot it reads: the bug is gone, drop the carve-out")
	}
	matches := matcher(t, frame)
	ours, err := Compile(expr)
	if at, ok := readsUnsetX(ours); err == nil && ok {
		t.Errorf("our program reads a slot unset at %d:%s", at, listing(ours))
	}
	if !matches(ours, err) {
		t.Errorf("our program does not match the frame")
	}
	// The address part as libpcap's optimised program reads it (its
	// unoptimised one loads all four words of the address, past this
	// runt's end), the alternatives as its unoptimised one does (its
	// optimised one reads M[9] unset).
	if a, n := matches(libpcapUnoptimised(alts)), matches(libpcap("dst or src net 2001:db8:1::/48")); !a || !n {
		t.Errorf("libpcap's programs of the parts do not both match the frame: alternatives %v, address %v", a, n)
	}
}

// unoptimisedOracle runs libpcap's unoptimised program of expr.
func unoptimisedOracle(t testing.TB, expr string) *bpfmatchtest.Oracle {
	t.Helper()
	p, err := libpcapUnoptimised(expr)
	if err != nil {
		t.Fatalf("%q: unoptimised libpcap: %v", expr, err)
	}
	o, err := bpfmatchtest.NewOracle(p)
	if err != nil {
		t.Fatalf("%q: libpcap's unoptimised program: %v", expr, err)
	}
	return o
}

// TestLibpcapJsetAllOnes pins the libpcap optimiser bug FuzzLibpcap found
// in CI with "ether[1:2] & -0 + -1 == ---0": the optimiser turns "and
// #0xffffffff; jeq #0" into "jset #0xffffffff" and then takes that jump as
// always true, though A can be 0. So "x & 0xffffffff == 0" is refused as
// rejecting all packets and "x & 0xffffffff != 0" matches every packet.
// libpcap fixed it upstream in 2026 (pull request 1698); Debian's 1.10.3
// has it. The frame's bytes 1 and 2 are zero: libpcap's unoptimised
// program and ours match the first and not the second.
func TestLibpcapJsetAllOnes(t *testing.T) {
	frame, _ := hex.DecodeString("02000000000202000000000108004500002d00074000400626c20a0000010a00000203e800160000000100000002500204005008000068656c6c6f00")
	run := matcher(t, frame)
	for _, expr := range []string{"ether[1:2] & -0 + -1 == ---0", "ether[1:2] & 0xffffffff == 0"} {
		if _, err := libpcap(expr); err == nil || !strings.Contains(err.Error(), "rejects all packets") {
			t.Errorf("%q: libpcap's optimiser says %v, not that it rejects all packets: the bug is gone, drop the carve-out", expr, err)
		}
		if unopt, ours := run(libpcapUnoptimised(expr)), run(Compile(expr)); !unopt || !ours {
			t.Errorf("%q on zero bytes: libpcap unoptimised %v, ours %v; want both to match", expr, unopt, ours)
		}
		compareWithLibpcap(t, expr, []bpfmatchtest.Frame{{Name: "zero ether[1:2]", Data: frame}}, &stats{})
	}
	const ne = "ether[1:2] & 0xffffffff != 0"
	opt, unopt, ours := run(libpcap(ne)), run(libpcapUnoptimised(ne)), run(Compile(ne))
	t.Logf("%q on zero bytes: libpcap optimised %v, unoptimised %v, ours %v", ne, opt, unopt, ours)
	if unopt || ours {
		t.Errorf("%q matches a frame whose ether[1:2] is 0", ne)
	}
}

// TestLibpcapOptimiserBug pins the libpcap 1.10 optimiser bug the random
// comparison found: on the path where the network matched, the optimised
// program drops "greater 1500", so a 94-byte packet matches. libpcap's
// unoptimised program, and ours, do not match it.
func TestLibpcapOptimiserBug(t *testing.T) {
	const expr = "(ip src net 10.0.0.0 mask 255.255.0.0 or less 70 && ip[23:1] == ip[40] && greater 1500) && tcp[tcpflags] & tcp-rst = 0"
	frame, _ := hex.DecodeString("02000000000202000000000108004f000050000700004006908b0a000001c00002010101010101010101010101010101010101010101010101010101010101010101010101010101010103e80016000000010000000250020400dbdf0000")
	run := matcher(t, frame)
	opt, unopt, ours := run(libpcap(expr)), run(libpcapUnoptimised(expr)), run(Compile(expr))
	t.Logf("libpcap optimised %v, unoptimised %v, ours %v", opt, unopt, ours)
	if ours || unopt {
		t.Errorf("a %d-byte packet matches \"greater 1500\"", len(frame))
	}
}
