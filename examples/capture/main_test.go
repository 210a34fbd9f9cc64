package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/exittest"
	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/pcapfile"
	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/internal/testenv"
)

func TestMain(m *testing.M) {
	exittest.Main("capture", main)
	os.Exit(m.Run())
}

// pair is an own veth pair with an afpacket sender on the peer.
func pair(t *testing.T) (*testbed.Bed, packetio.TxQueue, net.HardwareAddr) {
	t.Helper()
	testenv.NeedRoot(t)
	bed, err := testbed.Setup("", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bed.Close() })
	peer, err := bed.OpenPeer(func(name string) (packetio.Device, error) {
		return backend.Open("afpacket", name, backend.Config{TxQueues: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	mac, err := bed.MAC()
	if err != nil {
		t.Fatal(err)
	}
	return bed, peer.TxQueue(0), mac
}

// frames are n distinct UDP frames to port, of growing size.
func frames(mac net.HardwareAddr, port uint16, n int) [][]byte {
	var fs [][]byte
	for i := range n {
		s := frame.Spec{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, DstMAC: mac, SrcIP: testbed.AddrB.Addr(), DstIP: testbed.AddrA.Addr(),
			SrcPort: uint16(1000 + i), DstPort: port, Size: 60 + i}
		b := make([]byte, s.Len())
		frame.Build(b, s)
		fs = append(fs, b)
	}
	return fs
}

// send sends fs through tx, a few at a time.
func send(tx packetio.TxQueue, fs [][]byte) error {
	for i := 0; i < len(fs); {
		n, err := tx.SendFunc(min(8, len(fs)-i), func(j int, f []byte) int { return copy(f, fs[i+j]) })
		if err != nil {
			return err
		}
		i += n
		time.Sleep(time.Millisecond)
	}
	return nil
}

// readBack reads the file: frames, and stamps non-zero and non-decreasing
// per interface.
func readBack(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapfile.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	last := map[int]int64{}
	for {
		data, ci, err := r.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatalf("after %d frames: %v", len(got), err)
		}
		ns := ci.Timestamp.UnixNano()
		if ns <= 0 || ns < last[ci.InterfaceIndex] {
			t.Errorf("frame %d on interface %d: stamp %d after %d", len(got), ci.InterfaceIndex, ns, last[ci.InterfaceIndex])
		}
		if d := time.Since(ci.Timestamp); d < 0 || d > time.Hour {
			t.Errorf("frame %d: stamp %v is not now", len(got), ci.Timestamp)
		}
		last[ci.InterfaceIndex] = ns
		got = append(got, data)
	}
}

// captureMixed sends n frames to UDP port 7777 interleaved with n to 7778
// and captures them on backend with the filter "udp dst port 7777" and
// -count n. It returns the run's result, the frames wanted, the frames the
// file holds and the file.
func captureMixed(t *testing.T, backend string, n int) (result, [][]byte, [][]byte, string) {
	t.Helper()
	bed, tx, mac := pair(t)
	want := frames(mac, 7777, n)
	other := frames(mac, 7778, n)
	out := filepath.Join(t.TempDir(), "c.pcapng")
	o := options{backend: backend, out: out, expr: "udp dst port 7777", queues: 1, batch: 64, snaplen: pcapfile.DefaultSnapLen,
		count: uint64(len(want)), duration: 10 * time.Second, report: time.Second, bed: bed,
		feed: func(ctx context.Context) error {
			var mixed [][]byte
			for i := range want {
				mixed = append(mixed, other[i], want[i])
			}
			return send(tx, mixed)
		}}
	var buf bytes.Buffer
	res, err := run(context.Background(), o, &buf)
	t.Log(buf.String())
	if err != nil {
		t.Fatal(err)
	}
	return res, want, readBack(t, out), out
}

// TestCaptureFiltered: N known frames to port 7777 among frames to 7778
// are captured, with -count N, byte for byte, and tcpdump reads the file.
// The filter runs in user space on afpacket.
func TestCaptureFiltered(t *testing.T) {
	res, want, got, out := captureMixed(t, "afpacket", 20)
	if !strings.Contains(res.first, `filter "udp dst port 7777" in user space`) || !strings.Contains(res.first, "stamps: the backend's, CLOCK_REALTIME") {
		t.Errorf("first line %q", res.first)
	}
	if len(got) != len(want) {
		t.Fatalf("%d frames in the file, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("frame %d: % x, want % x", i, got[i], want[i])
		}
	}
	if res.filtered == 0 {
		t.Error("nothing filtered out")
	}
	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		testenv.CannotRun(t, "needs tcpdump: %v", err)
	}
	td, err := exec.Command(tcpdump, "-nn", "-r", out).CombinedOutput()
	if err != nil {
		t.Fatalf("tcpdump: %v\n%s", err, td)
	}
	lines := 0
	for l := range strings.Lines(string(td)) {
		if strings.Contains(l, "10.99.0.2.1000 > 10.99.0.1.7777: UDP") || strings.Contains(l, "> 10.99.0.1.7777: UDP") {
			lines++
		}
	}
	if lines != len(want) || !strings.Contains(string(td), "10.99.0.2.1000 > 10.99.0.1.7777: UDP, length 18") {
		t.Errorf("tcpdump read %d UDP frames to 7777, want %d:\n%s", lines, len(want), td)
	}
}

// TestCaptureStoppedByContext: cancelling the run (what Ctrl-C does)
// leaves a complete file holding what was captured.
func TestCaptureStoppedByContext(t *testing.T) {
	bed, tx, mac := pair(t)
	want := frames(mac, 7777, 10)
	out := filepath.Join(t.TempDir(), "c.pcapng")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := options{backend: "afpacket", out: out, expr: "udp port 7777", queues: 1, batch: 64, snaplen: 100, report: time.Second, bed: bed,
		feed: func(fctx context.Context) error {
			err := send(tx, want)
			time.Sleep(200 * time.Millisecond) // let the capture drain its ring
			cancel()
			return err
		}}
	var buf bytes.Buffer
	res, err := run(ctx, o, &buf)
	t.Log(buf.String())
	if err != nil {
		t.Fatal(err)
	}
	got := readBack(t, out)
	if len(got) != len(want) || res.packets != uint64(len(want)) {
		t.Fatalf("%d frames in the file (%d said), want %d", len(got), res.packets, len(want))
	}
}

// TestCaptureOnOwnPair: the program as a user runs it, fed by the
// in-kernel generator, ended by -count.
func TestCaptureOnOwnPair(t *testing.T) {
	testenv.NeedRoot(t)
	testenv.NeedBPF(t)
	out := filepath.Join(t.TempDir(), "c.pcapng")
	o := options{backend: "afpacket", out: out, queues: 1, batch: 64, snaplen: 64, count: 1000, duration: 10 * time.Second, report: time.Second, feedPPS: 100000}
	var buf bytes.Buffer
	res, err := run(context.Background(), o, &buf)
	t.Log(buf.String())
	if err != nil {
		t.Fatal(err)
	}
	if got := readBack(t, out); len(got) != 1000 || res.packets != 1000 {
		t.Errorf("%d frames in the file, %d said, want 1000", len(got), res.packets)
	}
}

func TestCaptureRefusesFlags(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"-queues 0", "-queues 1-64"},
		{"-f port", "filter: pcapfilter: column"},
		{"-snaplen 0", "-snaplen at least 1"},
	} {
		exittest.Refused(t, "capture", tc.args, tc.want)
	}
}

// TestCaptureKernelFilterAFXDP: on afxdp the expression is the XDP
// program's steering: only matching frames reach the queue (nothing is
// filtered in user space), and the stamps are afxdp's.
func TestCaptureKernelFilterAFXDP(t *testing.T) {
	testenv.NeedBPF(t)
	res, want, got, _ := captureMixed(t, "afxdp", 10)
	if !strings.Contains(res.first, `filter "udp dst port 7777" in the kernel`) || !strings.Contains(res.first, "stamps: the backend's, CLOCK_MONOTONIC") {
		t.Errorf("first line %q", res.first)
	}
	if len(got) != len(want) || res.filtered != 0 {
		t.Fatalf("%d frames in the file, want %d; %d filtered in user space", len(got), len(want), res.filtered)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("frame %d differs", i)
		}
	}
}
