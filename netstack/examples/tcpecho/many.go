//go:build linux

package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/netstack"
	"github.com/packetio/packetio/netstack/examples/internal/connloop"
)

// -many N: N connections from the kernel on B to one server, all opened
// before any moves a byte, then each moving -bytes in -mode at once. Every
// one must finish; the report gives the aggregate rate and the memory the
// process took per connection.

const (
	// manyBuf is the read buffer of each connection's handler and of each
	// client: allocated before the memory baseline, so the figure per
	// connection is the stack's (and the goroutines'), not tcpecho's.
	manyBuf = 32 << 10
	// manyDialers is how many goroutines open the connections on B.
	manyDialers = 16
	// manyDeadline bounds the whole of one -many measurement.
	manyDeadline = 2 * time.Minute
	// manySample is how often the memory is sampled while data moves.
	manySample = 20 * time.Millisecond
)

// memSample is what runtime.MemStats says at one moment.
type memSample struct{ heapInuse, sys uint64 }

func readMem() memSample {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memSample{m.HeapInuse, m.Sys}
}

// manyResult is one -many measurement.
type manyResult struct {
	n, completed int
	elapsed      time.Duration
	gbps         float64
	// before is after a GC with the server listening and no connection;
	// open with every connection accepted, before data moves; peak the
	// largest of each figure sampled while data moves (and open).
	before, open, peak memSample
	// failures counts the connections that did not complete, by reason.
	failures map[string]int
}

// perConn is (peak - before) / n for the heap in use and for the memory
// taken from the OS.
func (r manyResult) perConn() (heap, sys float64) {
	if r.n == 0 {
		return 0, 0
	}
	d := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(r.n) }
	return d(r.peak.heapInuse, r.before.heapInuse), d(r.peak.sys, r.before.sys)
}

// failed describes the connections that did not complete, most common
// reason first, or "" when all did.
func (r manyResult) failed() string {
	if r.completed == r.n {
		return ""
	}
	why := make([]string, 0, len(r.failures))
	for k := range r.failures {
		why = append(why, k)
	}
	slices.SortFunc(why, func(a, b string) int { return r.failures[b] - r.failures[a] })
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d connections did not complete:", r.n-r.completed, r.n)
	for i, k := range why {
		if i == 5 {
			fmt.Fprintf(&b, " (and %d more reasons)", len(why)-i)
			break
		}
		fmt.Fprintf(&b, " %d: %s;", r.failures[k], k)
	}
	return strings.TrimSuffix(b.String(), ";")
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// report is the result as tcpecho prints it; buffers says what the server's
// connections were given.
func (r manyResult) report(mode string, bytes int64, buffers string) string {
	heap, sys := r.perConn()
	return fmt.Sprintf("%d connections, %s %d KiB each: %d completed in %v, %.2f Gbit/s aggregate\n"+
		"    memory: heap in use %.1f MiB before, %.1f with all open, %.1f at peak; from the OS %.1f, %.1f, %.1f MiB\n"+
		"    per connection: %.1f KiB heap in use, %.1f KiB from the OS (peak less before, / %d); %s",
		r.n, mode, bytes>>10, r.completed, r.elapsed.Round(time.Millisecond), r.gbps,
		mib(r.before.heapInuse), mib(r.open.heapInuse), mib(r.peak.heapInuse),
		mib(r.before.sys), mib(r.open.sys), mib(r.peak.sys),
		heap/1024, sys/1024, r.n, buffers)
}

// stackBuffers says what each of the stack's TCP endpoints is given (the
// self-test's stack takes Config's defaults).
func stackBuffers() string {
	return fmt.Sprintf("stack buffers per endpoint (Config defaults): send %d KiB, receive %d KiB (auto-tuned up to 32 MiB); tcpecho's %d KiB read buffers per connection (client and server) are allocated before the baseline",
		netstack.DefaultBufferSize>>10, netstack.DefaultBufferSize>>10, manyBuf>>10)
}

// measureMany is measure for -many: it serves on l, opens -many
// connections from B to addr, moves -bytes on each at once and prints the
// report. Any connection that does not complete is an error naming how
// many and why.
func measureMany(o options, pair *netns.Pair, l net.Listener, addr string) (result, error) {
	buffers := stackBuffers()
	if _, kernel := l.(*net.TCPListener); kernel {
		buffers = "the kernel's socket buffers are not in these figures"
	}
	r, err := runMany(o, pair, l, addr)
	if err != nil {
		return result{}, err
	}
	fmt.Println("  " + r.report(o.mode, o.bytes, buffers))
	if why := r.failed(); why != "" {
		return result{gbps: []float64{r.gbps}, many: &r}, errors.New(why)
	}
	return result{gbps: []float64{r.gbps}, many: &r}, nil
}

// manyServer hands each accepted connection one of its preallocated
// buffers and handles it by mode until it closes.
type manyServer struct {
	l     net.Listener
	mode  string
	bytes int64
	bufs  chan []byte
	wg    sync.WaitGroup
	mu    sync.Mutex
	live  map[net.Conn]bool
	acc   chan struct{} // one value per accepted connection
}

func (s *manyServer) serve() {
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.live[c] = true
		s.mu.Unlock()
		s.acc <- struct{}{}
		s.wg.Add(1)
		go s.handle(c)
	}
}

func (s *manyServer) handle(c net.Conn) {
	defer s.wg.Done()
	buf := <-s.bufs
	defer func() {
		s.bufs <- buf
		s.mu.Lock()
		delete(s.live, c)
		s.mu.Unlock()
		c.Close()
	}()
	switch s.mode {
	case "echo":
		connloop.Echo(c, buf)
	case "sink":
		connloop.Drain(c, buf)
	case "source":
		connloop.WriteN(c, buf, s.bytes)
	}
}

// closeAll closes the listener and every connection still open, and waits
// for the handlers.
func (s *manyServer) closeAll() {
	s.l.Close()
	s.mu.Lock()
	for c := range s.live {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// runMany does the measurement: the error is for what stops it as a whole
// (B's namespace); connections that fail are counted in the result.
func runMany(o options, pair *netns.Pair, l net.Listener, addr string) (manyResult, error) {
	n := o.many
	r := manyResult{n: n, failures: map[string]int{}}
	srv := &manyServer{l: l, mode: o.mode, bytes: o.bytes, bufs: make(chan []byte, n), live: map[net.Conn]bool{}, acc: make(chan struct{}, n)}
	cbufs := make([][]byte, n)
	for i := range n {
		srv.bufs <- make([]byte, manyBuf)
		cbufs[i] = make([]byte, manyBuf)
	}
	runtime.GC()
	r.before = readMem()
	done := make(chan struct{})
	go func() { defer close(done); srv.serve() }()
	defer func() { srv.closeAll(); <-done }()
	deadline := time.Now().Add(manyDeadline)

	// Open every connection from B, manyDialers at a time.
	conns := make([]net.Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var nsErr error
	var nsOnce sync.Once
	for range min(manyDialers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := pair.B.Do(func() error {
				d := clientDialer(o, 10*time.Second)
				for i := range next {
					conns[i], errs[i] = d.Dial("tcp4", addr)
					if errs[i] != nil {
						errs[i] = fmt.Errorf("dial: %w", errs[i])
					}
				}
				return nil
			})
			if err != nil {
				nsOnce.Do(func() { nsErr = err })
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	if nsErr != nil {
		return r, nsErr
	}
	// Wait until the server has accepted every connection that opened.
	opened := 0
	for _, c := range conns {
		if c != nil {
			c.SetDeadline(deadline)
			opened++
		}
	}
	timeout := time.After(30 * time.Second)
	for accepted := 0; accepted < opened; accepted++ {
		select {
		case <-srv.acc:
		case <-timeout:
			return r, fmt.Errorf("the server accepted %d of %d connections in 30 s", accepted, opened)
		}
	}
	r.open = readMem()
	r.peak = r.open

	// Sample the memory while every connection moves its bytes.
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(manySample)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				m := readMem()
				r.peak.heapInuse = max(r.peak.heapInuse, m.heapInuse)
				r.peak.sys = max(r.peak.sys, m.sys)
			}
		}
	}()
	zero := make([]byte, 64<<10) // written by every client, never into
	start := time.Now()
	for i, c := range conns {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = moveMany(c, o.mode, o.bytes, cbufs[i], zero)
		}()
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	close(stop)
	<-sampled
	for _, err := range errs {
		if err == nil {
			r.completed++
			continue
		}
		r.failures[reason(err)]++
	}
	r.gbps = float64(o.bytes) * float64(r.completed) * 8 / r.elapsed.Seconds() / 1e9
	return r, nil
}

// reason is an error without what differs from one connection to the next
// (addresses, ports), so that failures group.
func reason(err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) {
		s := oe.Op + ": " + oe.Err.Error()
		if head, _, ok := strings.Cut(err.Error(), ": "); ok && head != oe.Op {
			s = head + ": " + s
		}
		return s
	}
	return err.Error()
}

// moveMany is move for one of many connections: the client's half of mode
// through buf, with the writes taken from zero, shared by every client.
func moveMany(c net.Conn, mode string, n int64, buf, zero []byte) error {
	var werr error
	var wg sync.WaitGroup
	if mode != "source" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, werr = connloop.WriteN(c, zero, n)
			if werr == nil {
				werr = c.(interface{ CloseWrite() error }).CloseWrite()
			}
		}()
	}
	got, rerr := connloop.Drain(c, buf)
	wg.Wait()
	if werr != nil {
		return fmt.Errorf("send: %w", werr)
	}
	if rerr != nil {
		return fmt.Errorf("receive: %w", rerr)
	}
	want := n
	if mode == "sink" {
		want = 0
	}
	if got != want {
		return fmt.Errorf("%s: received %d bytes, want %d", mode, got, want)
	}
	return nil
}

// manyDefaults makes -bytes 1 MiB with -many unless it was given, and
// refuses -many outside the self-test.
func manyDefaults(o *options) error {
	if o.many == 0 {
		return nil
	}
	if o.many < 0 || o.iface != "" {
		return fmt.Errorf("-many %d: a positive count, for the self-test (no -i)", o.many)
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "bytes" })
	if !set {
		o.bytes = 1 << 20
	}
	return nil
}
