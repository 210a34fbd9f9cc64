// Package eal is the dpdk backend's only cgo: the EAL, ports, the frame
// region and its mempools, bursts and rte_flow, behind a small C shim whose
// header includes no DPDK header. The argument builder in this file is pure
// Go and builds everywhere; the rest needs -tags dpdk.
package eal

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Args is what the EAL is started with, once per process.
type Args struct {
	// NoHuge runs the EAL on ordinary pages (--no-huge), which only
	// virtual devices can use: there are no physical addresses.
	NoHuge bool
	// Memory is the EAL's memory in megabytes (-m). Zero means
	// DefaultMemory with NoHuge and the EAL's own choice otherwise.
	Memory int
	// FilePrefix names the run's files (--file-prefix). Empty means
	// "packetio" plus the process id, so test binaries of different
	// packages running at once never share one.
	FilePrefix string
	// LogLevel is passed as --log-level when set (e.g. "lib.eal:debug").
	LogLevel string
	// Lcores is passed as -l when set. Empty leaves the EAL's default.
	Lcores string
	// Extra are appended last, so they can override anything before.
	Extra []string
}

// DefaultMemory is the -m used with NoHuge when Memory is zero.
const DefaultMemory = 256

// Argv returns the EAL command line. Devices are never named on it: they
// are probed afterwards on the caller's thread, so a virtual device over an
// interface in another network namespace opens its socket there. There is
// no PCI scan either (--no-pci); PCI devices are probed by address.
func (a Args) Argv() []string {
	prefix := a.FilePrefix
	if prefix == "" {
		prefix = "packetio" + strconv.Itoa(os.Getpid())
	}
	argv := []string{"packetio", "--no-telemetry", "--no-pci", "--no-shconf", "--file-prefix", prefix}
	if a.NoHuge {
		m := a.Memory
		if m <= 0 {
			m = DefaultMemory
		}
		argv = append(argv, "--no-huge", "-m", strconv.Itoa(m))
	} else {
		// --in-memory keeps hugepage files off the filesystem; it
		// cannot be combined with --no-huge (DPDK refuses the pair).
		argv = append(argv, "--in-memory")
		if a.Memory > 0 {
			argv = append(argv, "-m", strconv.Itoa(a.Memory))
		}
	}
	if a.Lcores != "" {
		argv = append(argv, "-l", a.Lcores)
	}
	if a.LogLevel != "" {
		argv = append(argv, "--log-level="+a.LogLevel)
	}
	return append(argv, a.Extra...)
}

// Validate refuses arguments that cannot work.
func (a Args) Validate() error {
	if a.Memory < 0 {
		return fmt.Errorf("eal: negative memory %d MB", a.Memory)
	}
	if strings.ContainsAny(a.FilePrefix, "/\x00") {
		return fmt.Errorf("eal: file prefix %q contains a slash or NUL", a.FilePrefix)
	}
	for _, s := range a.Extra {
		if strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf("eal: argument %q contains NUL", s)
		}
	}
	return nil
}

// IsPCI reports whether a device name is a PCI address (domain optional),
// looking only at the part before the first comma.
func IsPCI(name string) bool {
	s, _, _ := strings.Cut(name, ",")
	if strings.HasPrefix(s, "net_") {
		return false
	}
	parts := strings.Split(s, ":")
	if len(parts) == 3 {
		if len(parts[0]) != 4 || !isHex(parts[0]) {
			return false
		}
		parts = parts[1:]
	}
	if len(parts) != 2 || len(parts[0]) != 2 || !isHex(parts[0]) {
		return false
	}
	dev, fn, ok := strings.Cut(parts[1], ".")
	return ok && len(dev) == 2 && isHex(dev) && len(fn) == 1 && fn[0] >= '0' && fn[0] <= '7'
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// DriverOf returns the driver part of a vdev spec: "net_af_packet" for
// "net_af_packet0,iface=x". It returns "" for anything that is not a net_
// virtual device.
func DriverOf(name string) string {
	s, _, _ := strings.Cut(name, ",")
	if !strings.HasPrefix(s, "net_") {
		return ""
	}
	return strings.TrimRight(s, "0123456789")
}

// DeviceName is the part of a device spec before its arguments: the name
// the EAL gives the probed device.
func DeviceName(spec string) string {
	s, _, _ := strings.Cut(spec, ",")
	return s
}
