//go:build linux

package afpacket

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testframe"
)

// steerMark starts the payload of every frame of the steering tests; the
// 32-bit number after it names the frame.
var steerMark = []byte("KSTEER")

// steerFrame builds s with a payload naming the frame: id.
func steerFrame(t testing.TB, s testframe.Spec, id uint32) []byte {
	s.Payload = binary.BigEndian.AppendUint32(append([]byte(nil), steerMark...), id)
	return s.Build(t)
}

// steerID finds the frame's name, or -1 when it is not a test frame.
func steerID(f []byte) int {
	i := bytes.Index(f, steerMark)
	if i < 0 || len(f) < i+len(steerMark)+4 {
		return -1
	}
	return int(binary.BigEndian.Uint32(f[i+len(steerMark):]))
}

// receiveIDs drains every receive queue of d until the frame named stop
// has arrived on one of them, and counts the test frames by name.
func receiveIDs(t *testing.T, d *Device, stop int) map[int]int {
	t.Helper()
	got := map[int]int{}
	deadline := time.Now().Add(10 * time.Second)
	for got[stop] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the last matching frame (%d) never arrived; got %v", stop, got)
		}
		for _, rx := range d.Rx {
			rx.Fill(rx.NumFreeFillSlots())
			if _, err := rx.Poll(10 * time.Millisecond); err != nil {
				t.Fatalf("Poll: %v", err)
			}
			descs := rx.Receive(256)
			for _, desc := range descs {
				if id := steerID(rx.Region().Frame(desc)); id >= 0 {
					got[id]++
				}
			}
			rx.Recycle(descs)
		}
	}
	return got
}

// steerFilter has one rule with a condition of every kind but the MAC.
var steerFilter = packetio.SteeringFilter{Match: append([]packetio.Match{
	packetio.MatchVLAN(5),
	packetio.MatchEtherType(0x0800),
	packetio.MatchSrcIP(netip.MustParsePrefix("10.0.0.1/32")),
	packetio.MatchDstIP(netip.MustParsePrefix("10.0.0.0/24")),
	packetio.MatchDstMAC([6]byte(testframe.MACB)),
}, packetio.MatchDstPort(packetio.IPProtoUDP, 9000)...)}

// TestIntegrationSteeringNearMisses sends frames that differ from the
// filter's rule in one field each, then frames that match it: every
// matching frame reaches a ring exactly once, no near miss reaches one.
// Two receive queues, so both fanout members carry the filter.
func TestIntegrationSteeringNearMisses(t *testing.T) {
	pair := netns.New(t)
	rx := openIn(t, pair.A, WithRxQueues(2), WithTxQueues(0), WithFrames(1024), WithSteering(steerFilter))
	if c := rx.Capabilities(); !c.SteeringCopies || !c.KernelCoexistence {
		t.Fatalf("Capabilities() = %+v, want SteeringCopies and KernelCoexistence", c)
	}
	tx := openIn(t, pair.B, WithRxQueues(0), WithTxQueues(1), WithFrames(256))

	match := testframe.Spec{VLAN: []uint16{5}, Src: "10.0.0.1", Dst: "10.0.0.2", SPort: 1000, DPort: 9000}
	misses := map[string]testframe.Spec{}
	for name, change := range map[string]func(*testframe.Spec){
		"vlan 6":         func(s *testframe.Spec) { s.VLAN = []uint16{6} },
		"untagged":       func(s *testframe.Spec) { s.VLAN = nil },
		"dst port 9001":  func(s *testframe.Spec) { s.DPort = 9001 },
		"src port 9000":  func(s *testframe.Spec) { s.SPort, s.DPort = 9000, 1000 },
		"tcp":            func(s *testframe.Spec) { s.Proto = layers.IPProtocolTCP },
		"src 10.0.0.3":   func(s *testframe.Spec) { s.Src = "10.0.0.3" },
		"dst 10.0.1.2":   func(s *testframe.Spec) { s.Dst = "10.0.1.2" },
		"ipv6":           func(s *testframe.Spec) { s.V6, s.Src, s.Dst = true, "", "" },
		"ethertype":      func(s *testframe.Spec) { s.Ether = 0x88b5 },
		"dst mac":        func(s *testframe.Spec) { s.DstMAC = testframe.MACA },
		"later fragment": func(s *testframe.Spec) { s.FragOff = 10 },
	} {
		s := match
		change(&s)
		misses[name] = s
	}
	const perKind = 20
	var frames [][]byte
	names := map[int]string{}
	id := uint32(1000)
	for name, s := range misses {
		for range perKind {
			names[int(id)] = name
			frames = append(frames, steerFrame(t, s, id))
			id++
		}
	}
	// IPv4 options move the port: the filter reads the header length.
	matches := []testframe.Spec{match, func() testframe.Spec { s := match; s.IPOpts = true; return s }()}
	var last int
	for i := range 2 * perKind {
		frames = append(frames, steerFrame(t, matches[i%2], uint32(i)))
		last = i
	}
	sendFrames(t, tx.Tx[0], frames)
	got := receiveIDs(t, rx, last)
	for i := 0; i <= last; i++ {
		if got[i] != 1 {
			t.Errorf("matching frame %d arrived %d times, want once", i, got[i])
		}
	}
	for id, n := range got {
		if id >= 1000 {
			t.Errorf("near miss %q (frame %d) reached a ring %d times", names[id], id, n)
		}
	}
	if len(got) != last+1 {
		t.Errorf("got %d distinct frames, want %d", len(got), last+1)
	}
}

// TestIntegrationSteeringNoLeakAtOpen opens filtered devices while the peer
// floods frames the filter refuses: none of them may be in a ring, not even
// ones that arrived while the socket was being set up.
func TestIntegrationSteeringNoLeakAtOpen(t *testing.T) {
	pair := netns.New(t)
	tx := openIn(t, pair.B, WithRxQueues(0), WithTxQueues(1), WithFrames(256))
	miss := steerFrame(t, testframe.Spec{Ether: 0x88b5}, 1000)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex // the transmit queue is used by one goroutine at a time
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			tx.Tx[0].Complete(1 << 20)
			n, _ := tx.Tx[0].SendFunc(32, func(_ int, f []byte) int { return copy(f, miss) })
			mu.Unlock()
			if n == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	t.Cleanup(func() { close(stop); wg.Wait() })
	f := packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchEtherType(0x88b6)}}
	for round := range 5 {
		var rx *Device
		if err := pair.A.Do(func() (err error) {
			rx, err = Open(pair.A.Link, WithRxQueues(2), WithTxQueues(0), WithFrames(256), WithSteering(f))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		sendFrames(t, tx.Tx[0], [][]byte{steerFrame(t, testframe.Spec{Ether: 0x88b6}, uint32(round))})
		mu.Unlock()
		got := receiveIDs(t, rx, round)
		rx.Close()
		if got[1000] != 0 || len(got) != 1 {
			t.Fatalf("round %d: the ring held %d refused frames (%v)", round, got[1000], got)
		}
	}
}

// TestIntegrationFilterExpr: a tcpdump expression filters the same way.
func TestIntegrationFilterExpr(t *testing.T) {
	pair := netns.New(t)
	rx := openIn(t, pair.A, WithRxQueues(1), WithTxQueues(0), WithFrames(256), WithFilterExpr("udp dst port 9000 and src host 10.0.0.1"))
	if !rx.Capabilities().SteeringCopies {
		t.Error("SteeringCopies is false with WithFilterExpr")
	}
	tx := openIn(t, pair.B, WithRxQueues(0), WithTxQueues(1), WithFrames(256))
	frames := [][]byte{
		steerFrame(t, testframe.Spec{Src: "10.0.0.1", DPort: 9001}, 1000),
		steerFrame(t, testframe.Spec{Src: "10.0.0.3", DPort: 9000}, 1001),
		steerFrame(t, testframe.Spec{Src: "10.0.0.1", DPort: 9000, Proto: layers.IPProtocolTCP}, 1002),
		steerFrame(t, testframe.Spec{Src: "10.0.0.1", DPort: 9000}, 0),
		steerFrame(t, testframe.Spec{Src: "10.0.0.1", DPort: 9000}, 1),
	}
	sendFrames(t, tx.Tx[0], frames)
	got := receiveIDs(t, rx, 1)
	if len(got) != 2 || got[0] != 1 || got[1] != 1 {
		t.Fatalf("got %v, want frames 0 and 1 once each", got)
	}
}

// TestSteeringOptions: refusals name their option and wrap the right
// sentinel; nothing touches the system.
func TestSteeringOptions(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []Option
		want error
		in   string
	}{
		{"both", []Option{WithSteering(steerFilter), WithFilterExpr("udp")}, packetio.ErrInvalid, "WithFilterExpr"},
		{"contradiction", []Option{WithSteering(packetio.SteeringFilter{Match: []packetio.Match{{Kind: packetio.MatchKindDstPort, Port: 9}}})}, packetio.ErrUnsupported, "WithSteering"},
		{"no rule can match", []Option{WithSteering(packetio.SteeringFilter{Match: append(packetio.MatchDstPort(17, 9), packetio.MatchEtherType(0x0806))})}, packetio.ErrUnsupported, "WithSteering"},
		{"bad expression", []Option{WithFilterExpr("udp port")}, packetio.ErrInvalid, "WithFilterExpr"},
		{"empty expression", []Option{WithFilterExpr(" ")}, packetio.ErrInvalid, "WithFilterExpr"},
		{"no receive queue", []Option{WithRxQueues(0), WithSteering(steerFilter)}, packetio.ErrInvalid, "WithRxQueues(0)"},
	} {
		_, err := validate("veth0", c.opts)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.in) {
			t.Errorf("%s: %v, want %v naming %s", c.name, err, c.want, c.in)
		}
	}
	for _, opts := range [][]Option{
		{WithSteering(steerFilter)},
		{WithSteering(packetio.SteeringFilter{})},
		{WithSteering(packetio.SteeringFilter{Promiscuous: true})},
		{WithFilterExpr("vlan and udp")},
	} {
		r, err := validate("veth0", opts)
		if err != nil || len(r.rxFilterRaw) == 0 {
			t.Errorf("%v: %d instructions, %v", opts, len(r.rxFilterRaw), err)
		}
	}
	if r, err := validate("veth0", nil); err != nil || r.rxFilter != nil {
		t.Errorf("no option: filter %v, %v; want none", r.rxFilter, err)
	}
}

// TestIntegrationSteeringNoAllocations: with a filter on the receive
// sockets (it takes the test frames), the fast paths still allocate
// nothing.
func TestIntegrationSteeringNoAllocations(t *testing.T) {
	testNoAllocations(t, WithSteering(packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchEtherType(uint16(testEtherType))}}))
}
