package backend

import (
	"fmt"
	"strings"

	"github.com/packetio/packetio"
)

// Traits is what a device was granted, read back from it where the backend
// can say, in the words of an example's first line. A field the backend has
// no such thing for is "n/a".
type Traits struct {
	// Mode is how frames reach the program: "native XDP copy mode",
	// "kernel copy (TPACKET_V3 rings)".
	Mode string
	// NeedWakeup is "on", "off" or "n/a".
	NeedWakeup string
	// BusyPoll is "off", the busy-polling read back from the socket
	// ("50us budget 64"), "always (a polling driver)" or "n/a".
	BusyPoll string
	// Stamps is "on", "off", "on (the kernel's, always)" or "n/a".
	Stamps string
	// Kick is what one transmit kick sends, where the backend reads it
	// back ("up to 1024 frames a kick"), or "".
	Kick string
}

// traitsOf reads a device's traits, per backend; registered with the
// backend.
var traitsOf = map[string]func(packetio.Device, Config) Traits{}

// na is the traits of a backend that says nothing of itself.
var na = Traits{Mode: "n/a", NeedWakeup: "n/a", BusyPoll: "n/a", Stamps: "n/a"}

// TraitsOf reads what d, opened on backend with c, was granted. A device
// opened with no receive queues (c.RxQueues 0) is described as a sender.
func TraitsOf(backend string, d packetio.Device, c Config) Traits {
	if f, ok := traitsOf[backend]; ok && d != nil {
		return f(d, c)
	}
	return na
}

// Line is an example's first line: what it runs, on what, and what feeds or
// sinks it. Every field but Feed is read from the device where it can be,
// never from what was asked.
type Line struct {
	// Program is the example's name.
	Program string
	// Backend and Iface are the backend and the interface it opened.
	Backend, Iface string
	// Dev is the device, Config what it was opened with.
	Dev    packetio.Device
	Config Config
	// Rx and Tx say which of the device's queues the example drives.
	Rx, Tx bool
	// Batch is the most packets per call of the example's loop.
	Batch int
	// CPUs are the CPUs the workers are pinned to, in worker order; none:
	// left to the scheduler.
	CPUs []int
	// Feed says what feeds or sinks the example ("fed by ...",
	// "sending to ..."); "" for nothing.
	Feed string
}

// String is the line, without a newline.
func (l Line) String() string {
	t := TraitsOf(l.Backend, l.Dev, l.Config)
	if !l.Rx {
		t.Stamps = "n/a" // arrival stamps are for what is received
	}
	mode := t.Mode
	if l.Tx && t.Kick != "" {
		mode += ", " + t.Kick
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s on %s, %s, %s, need-wakeup %s, busy-poll %s, stamps %s, batch %d, %s",
		l.Program, l.Backend, l.Iface, l.queues(), mode, t.NeedWakeup, t.BusyPoll, t.Stamps, l.Batch, CPUString(l.CPUs))
	if l.Feed != "" {
		fmt.Fprintf(&b, "; %s", l.Feed)
	}
	return b.String()
}

func (l Line) queues() string {
	if l.Dev == nil {
		return "no queues"
	}
	var parts []string
	if l.Rx {
		parts = append(parts, plural(l.Dev.NumRxQueues(), "rx queue"))
	}
	if l.Tx {
		parts = append(parts, plural(l.Dev.NumTxQueues(), "tx queue"))
	}
	if len(parts) == 0 {
		return "no queues"
	}
	return strings.Join(parts, " + ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// CPUString says where workers run: "worker CPU 1", "worker CPUs 1,0" or
// "workers unpinned".
func CPUString(cpus []int) string {
	switch len(cpus) {
	case 0:
		return "workers unpinned"
	case 1:
		return fmt.Sprintf("worker CPU %d", cpus[0])
	}
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = fmt.Sprint(c)
	}
	return "worker CPUs " + strings.Join(s, ",")
}

// Flags are the example flags a backend may not have.
type Flags struct {
	BusyPoll, Stamps bool
}

// CheckFlags refuses a flag that backend has not got, naming both, instead
// of ignoring it: -busy-poll only where the backend can busy-poll on
// request (afxdp), -stamps where received frames can carry a stamp.
func CheckFlags(backend string, f Flags) error {
	caps, ok := flagCaps[backend]
	if !ok {
		caps = flagCaps[""]
	}
	if f.BusyPoll && caps.busyPoll != "" {
		return fmt.Errorf("-busy-poll: %s %s", backend, caps.busyPoll)
	}
	if f.Stamps && caps.stamps != "" {
		return fmt.Errorf("-stamps: %s %s", backend, caps.stamps)
	}
	return nil
}

// flagCaps says, per backend, why it refuses a flag ("" takes it).
var flagCaps = map[string]struct{ busyPoll, stamps string }{
	"afxdp":    {},
	"afpacket": {busyPoll: "has no busy-poll mode (afxdp has)"},
	"dpdk":     {busyPoll: "always polls: there is no busy-poll to turn on", stamps: "has no receive timestamps here"},
	"mlx5":     {busyPoll: "always polls: there is no busy-poll to turn on"},
	"":         {busyPoll: "has no busy-poll mode", stamps: "has no receive timestamps"},
}
