package host

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ethtool UAPI (include/uapi/linux/ethtool.h).
const (
	ethtoolGStrings  = 0x1b // ETHTOOL_GSTRINGS, struct ethtool_gstrings
	ethtoolGPFlags   = 0x27 // ETHTOOL_GPFLAGS, struct ethtool_value
	ethtoolSPFlags   = 0x28 // ETHTOOL_SPFLAGS, struct ethtool_value
	ethtoolGSSetInfo = 0x37 // ETHTOOL_GSSET_INFO, struct ethtool_sset_info

	ethSSPrivFlags = 2  // ETH_SS_PRIV_FLAGS
	ethGStringLen  = 32 // ETH_GSTRING_LEN
	maxPrivFlags   = 32 // the flags are one u32
)

// ethtoolIO performs SIOCETHTOOL requests. data is the command buffer
// (struct ethtool_*), which the kernel reads and fills in place. The real
// one is a socket (ethtool_unsafe.go); the tests use a fake.
type ethtoolIO interface {
	ethtool(ifname string, data []byte) error
	close() error
}

// The kernel's structs are in host byte order.
var ne = binary.NativeEndian

// privFlagNames returns the interface's private flag names in bit order;
// none (and no error) when the driver has no private flags.
func privFlagNames(dev ethtoolIO, ifname string) ([]string, error) {
	// struct ethtool_sset_info { u32 cmd; u32 reserved; u64 sset_mask; u32 data[]; }
	info := make([]byte, 16+4)
	ne.PutUint32(info[0:], ethtoolGSSetInfo)
	ne.PutUint64(info[8:], 1<<ethSSPrivFlags)
	if err := dev.ethtool(ifname, info); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return nil, nil
		}
		return nil, fmt.Errorf("ETHTOOL_GSSET_INFO: %w", err)
	}
	if ne.Uint64(info[8:])&(1<<ethSSPrivFlags) == 0 {
		return nil, nil
	}
	n := ne.Uint32(info[16:])
	if n == 0 {
		return nil, nil
	}
	if n > maxPrivFlags {
		return nil, fmt.Errorf("ETHTOOL_GSSET_INFO: %d private flags, at most %d fit the mask", n, maxPrivFlags)
	}
	// struct ethtool_gstrings { u32 cmd; u32 string_set; u32 len; u8 data[]; }
	gs := make([]byte, 12+int(n)*ethGStringLen)
	ne.PutUint32(gs[0:], ethtoolGStrings)
	ne.PutUint32(gs[4:], ethSSPrivFlags)
	ne.PutUint32(gs[8:], n)
	if err := dev.ethtool(ifname, gs); err != nil {
		return nil, fmt.Errorf("ETHTOOL_GSTRINGS: %w", err)
	}
	got := ne.Uint32(gs[8:])
	if got > n {
		return nil, fmt.Errorf("ETHTOOL_GSTRINGS: %d strings returned for %d asked", got, n)
	}
	names := make([]string, got)
	for i := range names {
		s := gs[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
		if z := bytes.IndexByte(s, 0); z >= 0 {
			s = s[:z]
		}
		names[i] = string(s)
	}
	return names, nil
}

// privFlags reads the private flag mask.
func privFlags(dev ethtoolIO, ifname string) (uint32, error) {
	// struct ethtool_value { u32 cmd; u32 data; }
	v := make([]byte, 8)
	ne.PutUint32(v[0:], ethtoolGPFlags)
	if err := dev.ethtool(ifname, v); err != nil {
		return 0, fmt.Errorf("ETHTOOL_GPFLAGS: %w", err)
	}
	return ne.Uint32(v[4:]), nil
}

// setPrivFlags writes the private flag mask.
func setPrivFlags(dev ethtoolIO, ifname string, mask uint32) error {
	v := make([]byte, 8)
	ne.PutUint32(v[0:], ethtoolSPFlags)
	ne.PutUint32(v[4:], mask)
	if err := dev.ethtool(ifname, v); err != nil {
		return fmt.Errorf("ETHTOOL_SPFLAGS: %w", err)
	}
	return nil
}

// privFlagHandle is one private flag, held through an open socket.
type privFlagHandle struct {
	dev    ethtoolIO
	ifname string
	what   string
	bit    uint32
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func (h *privFlagHandle) read() (string, error) {
	m, err := privFlags(h.dev, h.ifname)
	if err != nil {
		return "", ethtoolErr(h.what, err)
	}
	return onOff(m&h.bit != 0), nil
}

// write reads the mask again and flips only this flag, so another flag
// changed meanwhile is kept.
func (h *privFlagHandle) write(v string) error {
	m, err := privFlags(h.dev, h.ifname)
	if err != nil {
		return ethtoolErr(h.what, err)
	}
	switch v {
	case "on":
		m |= h.bit
	case "off":
		m &^= h.bit
	default:
		return fmt.Errorf("host: %s: value %q is neither on nor off", h.what, v)
	}
	if err := setPrivFlags(h.dev, h.ifname, m); err != nil {
		return ethtoolErr(h.what, err)
	}
	return nil
}

func (h *privFlagHandle) close() error { return h.dev.close() }

// ethtoolErr turns "cannot here" into *UnavailableError.
func ethtoolErr(what string, err error) error {
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return unavailable(what, "no permission to change it (needs CAP_NET_ADMIN)", err)
	case errors.Is(err, unix.EOPNOTSUPP):
		return unavailable(what, "the driver does not support it", err)
	case errors.Is(err, unix.ENODEV):
		return unavailable(what, "no such interface in this network namespace", err)
	}
	return fmt.Errorf("host: %s: %w", what, err)
}

// SetPrivFlag turns the driver private flag (as in ethtool
// --set-priv-flags) on or off on ifname, recorded in j so Restore puts it
// back. It talks SIOCETHTOOL on a socket of the calling thread's network
// namespace; no ethtool binary is used. changed reports whether the flag was
// written (false when it already had that value, or another journal had
// already set it).
//
// An interface without that flag gives an *UnavailableError saying
// "interface has no private flag <flag>"; another fleet holding the flag at
// the other value gives ErrConflict.
//
// mlx5 applies a private flag change by reopening its channels: set it
// before attaching an XDP program and binding sockets.
func SetPrivFlag(j *Journal, ifname, flag string, on bool) (changed bool, err error) {
	return setPrivFlag(j, openEthtool, ifname, flag, on)
}

func setPrivFlag(j *Journal, open func() (ethtoolIO, error), ifname, flag string, on bool) (bool, error) {
	if !safeName(ifname) {
		return false, fmt.Errorf("host: private flag %s: bad interface name %q", flag, ifname)
	}
	if flag == "" || len(flag) >= ethGStringLen {
		return false, fmt.Errorf("host: private flag %q on %s: bad flag name", flag, ifname)
	}
	what := "private flag " + flag + " on " + ifname
	ns, err := netnsID()
	if err != nil {
		return false, err
	}
	k := key{kind: kindPrivFlag, netns: ns, root: "ethtool", iface: ifname, setting: privFlagPrefix + flag}
	return j.acquire(k, what, onOff(on), func() (handle, error) {
		dev, err := open()
		if err != nil {
			return nil, fmt.Errorf("host: %s: %w", what, err)
		}
		names, err := privFlagNames(dev, ifname)
		if err != nil {
			return nil, errors.Join(ethtoolErr(what, err), dev.close())
		}
		for i, n := range names {
			if n == flag {
				return &privFlagHandle{dev: dev, ifname: ifname, what: what, bit: 1 << i}, nil
			}
		}
		return nil, errors.Join(unavailable(what, "interface has no private flag "+flag, nil), dev.close())
	})
}

// PrivFlag reports whether a driver private flag is on, asked through a
// socket of the calling thread's network namespace.
func PrivFlag(ifname, flag string) (bool, error) {
	dev, err := openEthtool()
	if err != nil {
		return false, fmt.Errorf("host: private flag %s on %s: %w", flag, ifname, err)
	}
	defer dev.close()
	return privFlag(dev, ifname, flag)
}

func privFlag(dev ethtoolIO, ifname, flag string) (bool, error) {
	what := "private flag " + flag + " on " + ifname
	if !safeName(ifname) {
		return false, fmt.Errorf("host: %s: bad interface name", what)
	}
	names, err := privFlagNames(dev, ifname)
	if err != nil {
		return false, ethtoolErr(what, err)
	}
	for i, n := range names {
		if n == flag {
			m, err := privFlags(dev, ifname)
			if err != nil {
				return false, ethtoolErr(what, err)
			}
			return m&(1<<i) != 0, nil
		}
	}
	return false, unavailable(what, "interface has no private flag "+flag, nil)
}
