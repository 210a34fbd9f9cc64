// Command replay sends the frames of a pcap or pcapng file (told apart by
// magic) through any packetio backend: at the pace they were recorded
// (-pace recorded, the default), at -rate packets a second, or as fast as
// the device takes them (-pace max). -loop N sends the file N times (0:
// until Ctrl-C). It prints a line per second and the totals at the end.
//
// The file is read into memory once. A frame longer than the device's
// MaxTxLen (what the link carries) is not sent, and one the capture cut
// short (its snap length below its length) is not sent either: both are
// counted and reported, never cut or padded. Under -pace recorded each
// loop lasts as long as the recording plus one mean gap between frames.
//
// With no -i it makes its own veth pair and sends to its peer, whose
// kernel drops what is not for it.
//
//	sudo go run ./examples/replay -r capture.pcapng
//	sudo go run ./examples/replay -i veth0 -r x.pcap -pace max -loop 0
//	sudo go run ./examples/replay -i veth0 -r x.pcap -rate 10000 -loop 3
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/metrics"
	"github.com/packetio/packetio/examples/internal/pcapfile"
	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/internal/spinwait"
)

type options struct {
	backend, iface, in, pace string
	rate                     float64
	loop, batch              int
	report                   time.Duration

	bed *testbed.Bed // tests: a bed to use instead of Setup
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "afpacket", "backend: "+fmt.Sprint(backend.Names()))
	flag.StringVar(&o.iface, "i", "", "interface (default: a veth pair in throwaway namespaces, needs root)")
	flag.StringVar(&o.in, "r", "", "pcap or pcapng file to send")
	flag.StringVar(&o.pace, "pace", "recorded", "recorded: the gaps in the file; max: as fast as the device takes them (-rate sets a rate instead)")
	flag.Float64Var(&o.rate, "rate", 0, "packets a second (overrides -pace)")
	flag.IntVar(&o.loop, "loop", 1, "times to send the file (0: until Ctrl-C)")
	flag.IntVar(&o.batch, "batch", 64, "most frames per SendFunc call")
	flag.DurationVar(&o.report, "report", time.Second, "interval between report lines")
	testbed.Main("replay", "usage: replay -r file [flags]\n\nSends a pcap or pcapng file through a device. Ctrl-C stops it.\nExit status: 0 on success, 1 if the device or file failed, 2 for bad flags.\n\n", func() error { return o.check() }, func(ctx context.Context) error {
		_, err := run(ctx, o, os.Stdout)
		return err
	})
}

func (o options) check() error {
	if o.in == "" {
		return errors.New("-r: no file to send")
	}
	if o.pace != "recorded" && o.pace != "max" {
		return fmt.Errorf("-pace %q: recorded or max", o.pace)
	}
	if o.rate < 0 || o.loop < 0 || o.batch < 1 || o.batch > 4096 || o.report <= 0 {
		return errors.New("-rate and -loop not negative, -batch 1-4096, positive -report")
	}
	return nil
}

// trace is the file in memory: frame i is data[off[i]:off[i+1]], due at
// at[i] nanoseconds after the first (never earlier than frame i-1).
type trace struct {
	data           []byte
	off            []int
	at             []int64
	period         int64 // one loop under -pace recorded
	tooLong, short int
	format         string
}

func (tr *trace) len() int { return len(tr.at) }

// load reads the file, keeping the frames the device can send.
func load(path string, maxLen int) (*trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := pcapfile.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tr := &trace{off: []int{0}, format: r.Format}
	var first, last int64
	for {
		b, ci, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: frame %d: %w", path, tr.len()+tr.tooLong+tr.short+1, err)
		}
		switch {
		case ci.CaptureLength < ci.Length:
			tr.short++
			continue
		case maxLen > 0 && len(b) > maxLen:
			tr.tooLong++
			continue
		}
		ns := ci.Timestamp.UnixNano()
		if tr.len() == 0 {
			first = ns
		}
		last = max(last, ns-first)
		tr.data = append(tr.data, b...)
		tr.off = append(tr.off, len(tr.data))
		tr.at = append(tr.at, last)
	}
	if n := tr.len(); n > 1 {
		tr.period = last + last/int64(n-1)
	}
	return tr, nil
}

type result struct {
	packets, bytes uint64
	first          string
}

func run(ctx context.Context, o options, w io.Writer) (result, error) {
	if err := o.check(); err != nil {
		return result{}, err
	}
	var setup bytes.Buffer
	bed := o.bed
	if bed == nil {
		var err error
		if bed, err = testbed.Setup(o.iface, &setup); err != nil {
			return result{}, err
		}
		defer bed.Close()
	}
	cfg := backend.Config{TxQueues: 1}
	d, err := bed.Open(func(name string) (packetio.Device, error) { return backend.Open(o.backend, name, cfg) })
	if err != nil {
		return result{}, err
	}
	maxLen := d.Capabilities().MaxTxLen
	if fs := d.Capabilities().MaxFrameSize; fs > 0 && (maxLen == 0 || fs < maxLen) {
		maxLen = fs
	}
	tr, err := load(o.in, maxLen)
	if err != nil {
		return result{}, err
	}
	pace := "as fast as the device takes them"
	switch {
	case o.rate > 0:
		pace = fmt.Sprintf("at %g packets a second", o.rate)
	case o.pace == "recorded":
		pace = "at the recorded pace"
	}
	loops := fmt.Sprintf("%d times", o.loop)
	if o.loop == 0 {
		loops = "until Ctrl-C"
	}
	line := backend.Line{Program: "replay", Backend: o.backend, Iface: bed.Name, Dev: d, Config: cfg, Tx: true, Batch: o.batch,
		Feed: fmt.Sprintf("sending %s (%s, %d frames, %d bytes) %s, %s", o.in, tr.format, tr.len(), len(tr.data), pace, loops)}
	res := result{first: line.String()}
	fmt.Fprintln(w, res.first)
	w.Write(setup.Bytes())
	if tr.tooLong > 0 || tr.short > 0 {
		fmt.Fprintf(w, "not sent, each loop: %d frames longer than the device's %d bytes, %d cut short by the capture's snap length\n", tr.tooLong, maxLen, tr.short)
	}
	if tr.len() == 0 {
		fmt.Fprintln(w, "total: nothing to send")
		return res, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var sent, bytesSent atomic.Uint64
	done := make(chan error, 1)
	go func() {
		done <- sendLoop(ctx, d.TxQueue(0), tr, o, &sent, &bytesSent)
		cancel()
	}()
	rerr := metrics.Every(ctx, w, o.report, func() (uint64, string) {
		return sent.Load(), fmt.Sprintf("; %d bytes", bytesSent.Load())
	})
	serr := <-done
	tx := d.TxQueue(0)
	for tx.NumInFlight() > 0 && tx.Complete(64) > 0 {
	}
	s, _ := tx.Stats()
	res.packets, res.bytes = sent.Load(), bytesSent.Load()
	fmt.Fprintf(w, "total: %d packets, %d bytes sent (%d refused by the device, %d errors); not sent: %d too long, %d cut short, per loop\n",
		res.packets, res.bytes, s.Refused, s.Errors, tr.tooLong, tr.short)
	return res, errors.Join(rerr, serr)
}

// sendLoop sends the trace o.loop times. Packet k (over all loops) is due
// at start + due(k); it sends what is due in batches and sleeps until the
// next is. The build function is made once: no allocation per batch.
func sendLoop(ctx context.Context, tx packetio.TxQueue, tr *trace, o options, sent, bytesSent *atomic.Uint64) error {
	n := tr.len()
	total := uint64(o.loop) * uint64(n) // 0: forever
	var k uint64
	due := func(k uint64) int64 {
		switch {
		case o.rate > 0:
			return int64(float64(k) * 1e9 / o.rate)
		case o.pace == "recorded":
			return int64(k/uint64(n))*tr.period + tr.at[k%uint64(n)]
		}
		return 0
	}
	var nbytes uint64
	build := func(i int, f []byte) int {
		j := int((k + uint64(i)) % uint64(n))
		b := tr.data[tr.off[j]:tr.off[j+1]]
		nbytes += uint64(len(b))
		return copy(f, b)
	}
	start := time.Now()
	for ctx.Err() == nil && (total == 0 || k < total) {
		batch := uint64(o.batch)
		if total > 0 {
			batch = min(batch, total-k)
		}
		if o.rate > 0 || o.pace == "recorded" {
			now := int64(time.Since(start))
			if wait := due(k) - now; wait > 0 {
				sleep(ctx, min(time.Duration(wait), 50*time.Millisecond))
				continue
			}
			var m uint64
			for m < batch && due(k+m) <= now {
				m++
			}
			batch = m
		}
		// build indexes modulo n: a batch may run over the end of a loop.
		nbytes = 0
		sentN, err := tx.SendFunc(int(batch), build)
		if err != nil {
			return err
		}
		if sentN == 0 {
			if err := tx.Err(); err != nil {
				return err
			}
			spinwait.Sleep(50 * time.Microsecond) // back-pressure
			continue
		}
		if sentN < int(batch) {
			// build counted bytes of frames the device did not take.
			nbytes = 0
			for i := range sentN {
				j := int((k + uint64(i)) % uint64(n))
				nbytes += uint64(tr.off[j+1] - tr.off[j])
			}
		}
		k += uint64(sentN)
		sent.Add(uint64(sentN))
		bytesSent.Add(nbytes)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
