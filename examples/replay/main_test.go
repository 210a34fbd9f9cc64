package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/exittest"
	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/pcapfile"
	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/internal/testenv"
)

func TestMain(m *testing.M) {
	exittest.Main("replay", main)
	os.Exit(m.Run())
}

const port = 7777

func frames(dst net.HardwareAddr, n int) [][]byte {
	var fs [][]byte
	for i := range n {
		s := frame.Spec{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: dst, SrcIP: testbed.AddrA.Addr(), DstIP: testbed.AddrB.Addr(),
			SrcPort: uint16(1000 + i), DstPort: port, Size: 60 + 7*i}
		b := make([]byte, s.Len())
		frame.Build(b, s)
		fs = append(fs, b)
	}
	return fs
}

// writeFiles writes fs as pcapng (1 ms apart) and as pcap, each with one
// frame too long for the link and one cut by the snap length after them.
func writeFiles(t *testing.T, fs [][]byte) (ng, pc string) {
	t.Helper()
	dir := t.TempDir()
	long := bytes.Repeat([]byte{0xee}, 3000)
	ng, pc = filepath.Join(dir, "f.pcapng"), filepath.Join(dir, "f.pcap")
	var nb bytes.Buffer
	w, err := pcapfile.NewWriter(&nb, "test", 0, []pcapfile.Iface{{Name: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	var pb bytes.Buffer
	pw := pcapgo.NewWriterNanos(&pb)
	pw.WriteFileHeader(65536, layers.LinkTypeEthernet)
	base := time.Now().UnixNano()
	all := append(append([][]byte{}, fs...), long)
	for i, f := range all {
		ts := base + int64(i)*int64(time.Millisecond)
		w.Write(0, ts, f)
		pw.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, ts), CaptureLength: len(f), Length: len(f)}, f)
	}
	cut := fs[0][:40]
	pw.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, base+1e9), CaptureLength: len(cut), Length: len(fs[0])}, cut)
	w.Flush()
	if err := os.WriteFile(ng, nb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pc, pb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return ng, pc
}

// TestReplayIntoCapture: a file replayed into one end of a veth pair is
// received at the other byte for byte, in order, loop after loop, at the
// recorded pace, at a rate and flat out; the frame too long for the link is
// counted and not sent.
func TestReplayIntoCapture(t *testing.T) {
	testenv.NeedRoot(t)
	bed, err := testbed.Setup("", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bed.Close() })
	peer, err := bed.OpenPeer(func(name string) (packetio.Device, error) {
		return backend.Open("afpacket", name, backend.Config{RxQueues: 1, TxQueues: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	rx := peer.RxQueue(0)
	mac, err := bed.PeerMAC()
	if err != nil {
		t.Fatal(err)
	}
	fs := frames(mac, 10)
	ng, pc := writeFiles(t, fs)
	for _, tc := range []struct {
		file, pace string
		rate       float64
		loop       int
	}{{ng, "recorded", 0, 2}, {pc, "max", 0, 3}, {ng, "max", 5000, 1}} {
		o := options{backend: "afpacket", in: tc.file, pace: tc.pace, rate: tc.rate, loop: tc.loop, batch: 4, report: time.Second, bed: bed}
		var out bytes.Buffer
		res, err := run(context.Background(), o, &out)
		t.Log(out.String())
		if err != nil {
			t.Fatal(err)
		}
		want := len(fs) * tc.loop
		if res.packets != uint64(want) {
			t.Errorf("%+v: %d sent, want %d", tc, res.packets, want)
		}
		wantShort := "0 cut short"
		if tc.file == pc {
			wantShort = "1 cut short"
		}
		if !strings.Contains(out.String(), "1 frames longer than the device's 1514 bytes, "+wantShort) {
			t.Errorf("%+v: the too long frame is not reported:\n%s", tc, out.String())
		}
		got := drain(rx)
		if len(got) != want {
			t.Fatalf("%+v: %d frames received, want %d", tc, len(got), want)
		}
		for i, g := range got {
			if !bytes.Equal(g, fs[i%len(fs)]) {
				t.Errorf("%+v: frame %d: % x, want % x", tc, i, g, fs[i%len(fs)])
			}
		}
	}
}

// drain collects the test's frames the peer received until none came for
// 200 ms.
func drain(rx packetio.RxQueue) [][]byte {
	var got [][]byte
	rx.Fill(rx.NumFreeFillSlots())
	quiet := time.Now()
	for time.Since(quiet) < 200*time.Millisecond {
		rx.Poll(20 * time.Millisecond)
		descs := rx.Receive(64)
		for _, d := range descs {
			b := rx.Region().Frame(d)
			if in, ok := frame.Parse(b); ok && in.DstPort == port {
				got = append(got, bytes.Clone(b))
			}
			quiet = time.Now()
		}
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
	}
	return got
}

func TestLoadRefuses(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x")
	os.WriteFile(p, []byte("not a capture at all"), 0o644)
	if _, err := load(p, 1514); err == nil || !strings.Contains(err.Error(), "not a pcap or pcapng file") {
		t.Errorf("%v", err)
	}
}

func TestReplayRefusesFlags(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"", "-r: no file to send"},
		{"-r x -pace slow", `-pace "slow": recorded or max`},
		{"-r x -loop -1", "-loop not negative"},
	} {
		exittest.Refused(t, "replay", tc.args, tc.want)
	}
}
