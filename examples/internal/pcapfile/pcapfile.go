// Package pcapfile writes the pcapng files examples/capture makes and reads
// the pcap and pcapng files examples/replay sends, through gopacket's pcapgo,
// and runs a tcpdump expression in user space for backends that cannot
// filter in the kernel.
package pcapfile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"golang.org/x/net/bpf"

	"github.com/packetio/packetio/filter/pcapfilter"
)

// DefaultSnapLen is what a capture keeps of each frame unless told
// otherwise: tcpdump's default, more than any frame a link carries.
const DefaultSnapLen = 262144

// Iface is one interface description block: what one stream of packets in
// the file came from.
type Iface struct {
	// Name is the interface's name ("veth0", "veth0 queue 1").
	Name string
	// Description says how packets were taken and stamped.
	Description string
	// Filter is the tcpdump expression applied, or "".
	Filter string
}

// Writer writes Ethernet frames to a pcapng file with nanosecond stamps
// (if_tsresol 9). It is not safe for concurrent use.
type Writer struct {
	ng   *pcapgo.NgWriter
	snap int
	n    int
}

// NewWriter writes the section header and one interface block per iface to
// w. snaplen 0 is DefaultSnapLen.
func NewWriter(w io.Writer, app string, snaplen int, ifaces []Iface) (*Writer, error) {
	if snaplen < 0 {
		return nil, fmt.Errorf("snaplen %d: negative", snaplen)
	}
	if snaplen == 0 {
		snaplen = DefaultSnapLen
	}
	if len(ifaces) == 0 {
		return nil, errors.New("pcapfile: no interfaces")
	}
	intf := func(f Iface) pcapgo.NgInterface {
		return pcapgo.NgInterface{Name: f.Name, Description: f.Description, Filter: f.Filter,
			OS: runtime.GOOS, LinkType: layers.LinkTypeEthernet, TimestampResolution: 9, SnapLength: uint32(snaplen)}
	}
	ng, err := pcapgo.NewNgWriterInterface(w, intf(ifaces[0]), pcapgo.NgWriterOptions{
		SectionInfo: pcapgo.NgSectionInfo{Hardware: runtime.GOARCH, OS: runtime.GOOS, Application: app}})
	if err != nil {
		return nil, err
	}
	for _, f := range ifaces[1:] {
		if _, err := ng.AddInterface(intf(f)); err != nil {
			return nil, err
		}
	}
	return &Writer{ng: ng, snap: snaplen, n: len(ifaces)}, nil
}

// Write adds one frame from interface ifc, stamped ns nanoseconds after
// the Unix epoch, cut to the snap length (the original length is kept).
// It does not allocate.
func (w *Writer) Write(ifc int, ns int64, frame []byte) error {
	c := min(len(frame), w.snap)
	ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, ns), CaptureLength: c, Length: len(frame), InterfaceIndex: ifc}
	return w.ng.WritePacket(ci, frame[:c])
}

// Stats writes an interface statistics block for ifc: what the device
// received and dropped between start and end.
func (w *Writer) Stats(ifc int, start, end time.Time, received, dropped uint64) error {
	return w.ng.WriteInterfaceStats(ifc, pcapgo.NgInterfaceStatistics{LastUpdate: end, StartTime: start, EndTime: end,
		PacketsReceived: received, PacketsDropped: dropped})
}

// Flush writes out what is buffered. The caller closes the file after.
func (w *Writer) Flush() error { return w.ng.Flush() }

// Magic numbers, as the first four bytes of a file read little-endian.
const (
	magicNg       = 0x0a0d0d0a
	magicPcap     = 0xa1b2c3d4
	magicPcapNano = 0xa1b23c4d
)

// Reader reads frames from a pcap or pcapng file, told apart by magic.
type Reader struct {
	// Format is "pcap" or "pcapng".
	Format string
	next   func() ([]byte, gopacket.CaptureInfo, error)
}

// NewReader detects the format by magic and reads the header. Files whose
// link type is not Ethernet are refused.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	head, err := br.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("not a pcap or pcapng file: %w", err)
	}
	le, be := binary.LittleEndian.Uint32(head), binary.BigEndian.Uint32(head)
	switch {
	case le == magicNg:
		ng, err := pcapgo.NewNgReader(br, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			return nil, fmt.Errorf("pcapng: %w", err)
		}
		if lt := ng.LinkType(); lt != layers.LinkTypeEthernet {
			return nil, fmt.Errorf("pcapng: link type %v, not Ethernet", lt)
		}
		return &Reader{Format: "pcapng", next: ng.ReadPacketData}, nil
	case le == magicPcap || be == magicPcap || le == magicPcapNano || be == magicPcapNano:
		p, err := pcapgo.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("pcap: %w", err)
		}
		if lt := p.LinkType(); lt != layers.LinkTypeEthernet {
			return nil, fmt.Errorf("pcap: link type %v, not Ethernet", lt)
		}
		return &Reader{Format: "pcap", next: p.ReadPacketData}, nil
	}
	return nil, fmt.Errorf("not a pcap or pcapng file: magic %x", head)
}

// Next returns the next frame (its bytes are the caller's) and its capture
// info, or io.EOF after the last.
func (r *Reader) Next() ([]byte, gopacket.CaptureInfo, error) { return r.next() }

// Filter runs a tcpdump expression, compiled to classic BPF by
// filter/pcapfilter, in golang.org/x/net/bpf's VM.
type Filter struct {
	expr string
	vm   *bpf.VM
}

// NewFilter compiles expr. The error names the column at fault.
func NewFilter(expr string) (*Filter, error) {
	prog, err := pcapfilter.Compile(expr)
	if err != nil {
		return nil, err
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", expr, err)
	}
	return &Filter{expr: expr, vm: vm}, nil
}

// Match reports whether frame passes. A nil Filter passes everything.
func (f *Filter) Match(frame []byte) bool {
	if f == nil {
		return true
	}
	n, err := f.vm.Run(frame)
	return err == nil && n > 0
}

// String is the expression.
func (f *Filter) String() string {
	if f == nil {
		return ""
	}
	return f.expr
}
