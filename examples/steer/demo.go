package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"golang.org/x/net/bpf"

	"github.com/packetio/packetio/filter/pcapfilter"
	"github.com/packetio/packetio/internal/netns"
)

// demoResult is what the demonstration saw.
type demoResult struct {
	ports  []uint16        // every port sent to, the asked ones and -other
	want   map[uint16]bool // whether the device must take a port's traffic
	device map[string]int  // what the device took, by kind
	kernel map[uint16]int  // what the kernel's sockets got, by port
	wrong  []string        // what went the wrong way
}

// clientPort is the source port of the datagrams to the i-th port, fixed so
// that -expr's reference verdict sees the frame that is really sent.
func clientPort(i int) uint16 { return 40000 + uint16(i) }

// demo opens the device on the pair's end A, kernel sockets on A for every
// port, and sends n datagrams to each port from a kernel socket on B; it
// fails unless the device got exactly the asked traffic and the kernel
// sockets the rest.
func demo(ctx context.Context, pair *netns.Pair, o options, ports []uint16, w io.Writer) (demoResult, error) {
	res := demoResult{want: map[uint16]bool{}, device: map[string]int{}, kernel: map[uint16]int{}}
	res.ports = append(append([]uint16(nil), ports...), uint16(o.other))
	if o.expr != "" && containsPort(ports, uint16(o.other)) {
		res.ports = ports
	}
	if err := expected(&res, pair, o); err != nil {
		return res, err
	}
	src, err := open(port{name: pair.A.Link, h: pair.A}, o, ports, w)
	if err != nil {
		return res, err
	}
	defer src.close()

	// The kernel's side: a UDP socket on A's address for every port.
	conns := make([]*net.UDPConn, len(res.ports))
	for i, p := range res.ports {
		if err := pair.A.Do(func() (err error) {
			conns[i], err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(pair.A.Addr.Addr(), p)))
			return err
		}); err != nil {
			return res, err
		}
		defer conns[i].Close()
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 2048)
			for lctx.Err() == nil {
				c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
				if _, err := c.Read(buf); err == nil {
					mu.Lock()
					res.kernel[res.ports[i]]++
					mu.Unlock()
				}
			}
		}()
	}
	var device map[string]int
	var lerr error
	ldone := make(chan struct{})
	go func() {
		defer close(ldone)
		device, lerr = listen(lctx, src, io.Discard)
	}()

	fmt.Fprintf(w, "sending %d UDP datagrams to each of ports %v of %s, from a kernel socket in %s's namespace\n", o.n, res.ports, pair.A.Addr.Addr(), pair.B.Link)
	if err := send(pair, res.ports, o.n); err != nil {
		return res, err
	}
	// The kernel's sockets are counted as they read; the device's count
	// comes when it stops, so give both time to see everything.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		mu.Lock()
		got := 0
		for p, n := range res.kernel {
			if !res.want[p] {
				got += n
			}
		}
		mu.Unlock()
		if got >= o.n*(len(res.ports)-countTrue(res.want)) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	<-ldone
	wg.Wait()
	if lerr != nil {
		return res, lerr
	}
	res.device = device

	printCounts(w, "the device took", res.device)
	fmt.Fprintln(w, "the kernel's UDP sockets got:")
	for _, p := range res.ports {
		fmt.Fprintf(w, "  udp/%-16d %d\n", p, res.kernel[p])
	}
	for _, p := range res.ports {
		dev, ker := res.device[fmt.Sprintf("udp/%d", p)], res.kernel[p]
		wantDev, wantKer := 0, o.n
		if res.want[p] {
			wantDev, wantKer = o.n, 0
		}
		if dev != wantDev || ker != wantKer {
			res.wrong = append(res.wrong, fmt.Sprintf("udp/%d: the device took %d (want %d), the kernel got %d (want %d)", p, dev, wantDev, ker, wantKer))
		}
	}
	var extra []string
	for k := range res.device {
		if !isDemoKind(k, res.ports) {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 && o.expr == "" {
		res.wrong = append(res.wrong, fmt.Sprintf("the device took traffic it did not ask for: %v", extra))
	}
	if len(res.wrong) > 0 {
		for _, s := range res.wrong {
			fmt.Fprintln(w, "  WRONG:", s)
		}
		return res, errors.New("traffic went the wrong way")
	}
	fmt.Fprintln(w, "only the asked traffic reached the device; the rest reached the kernel")
	return res, nil
}

func countTrue(m map[uint16]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

func isDemoKind(k string, ports []uint16) bool {
	for _, p := range ports {
		if k == fmt.Sprintf("udp/%d", p) {
			return true
		}
	}
	return false
}

// expected fills in which ports the device must take: the asked ones with
// -ports; with -expr, those whose datagram the expression's classic BPF
// program accepts in golang.org/x/net/bpf's interpreter, the reference the
// in-kernel translation is tested against.
func expected(res *demoResult, pair *netns.Pair, o options) error {
	if o.expr == "" {
		for _, p := range res.ports[:len(res.ports)-1] {
			res.want[p] = true
		}
		return nil
	}
	insns, err := pcapfilter.Compile(o.expr)
	if err != nil {
		return fmt.Errorf("-expr: %w", err)
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		return fmt.Errorf("-expr: the compiled program does not run: %w", err)
	}
	for i, p := range res.ports {
		f, err := datagram(pair, clientPort(i), p)
		if err != nil {
			return err
		}
		n, err := vm.Run(f)
		if err != nil {
			return fmt.Errorf("-expr: %w", err)
		}
		res.want[p] = n > 0
	}
	return nil
}

// datagram is the frame of one demonstration datagram, as the kernel on B
// sends it to A (its payload aside).
func datagram(pair *netns.Pair, sport, dport uint16) ([]byte, error) {
	eth := &layers.Ethernet{SrcMAC: pair.B.MAC, DstMAC: pair.A.MAC, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, Flags: layers.IPv4DontFragment,
		SrcIP: pair.B.Addr.Addr().AsSlice(), DstIP: pair.A.Addr.Addr().AsSlice()}
	u := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	_ = u.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, u, gopacket.Payload("steer demonstration"))
	return buf.Bytes(), err
}

// send sends n datagrams to each port of A from kernel sockets on B, each
// port's from its own fixed source port.
func send(pair *netns.Pair, ports []uint16, n int) error {
	for i, p := range ports {
		var c *net.UDPConn
		if err := pair.B.Do(func() (err error) {
			c, err = net.DialUDP("udp",
				net.UDPAddrFromAddrPort(netip.AddrPortFrom(pair.B.Addr.Addr(), clientPort(i))),
				net.UDPAddrFromAddrPort(netip.AddrPortFrom(pair.A.Addr.Addr(), p)))
			return err
		}); err != nil {
			return err
		}
		for k := range n {
			if _, err := c.Write([]byte(fmt.Sprintf("steer demonstration %d", k))); err != nil {
				c.Close()
				return fmt.Errorf("send to port %d: %w", p, err)
			}
			if k%16 == 15 {
				time.Sleep(time.Millisecond)
			}
		}
		c.Close()
	}
	return nil
}
