// Package dv is the only cgo in the mlx5 backend: bring-up and tear-down of
// raw-packet queues through libibverbs and libmlx5 (Direct Verbs), the
// netdev-to-verbs-device lookup, and a probe of the installed headers'
// layout. Everything it hands back is plain memory (queue buffers, doorbell
// records, the UAR) that the pure-Go rings in mlx5/internal/ring drive.
//
// The cgo files need -tags mlx5, cgo, linux and amd64 or arm64, and
// libibverbs-dev to build. The sysfs lookup in this file is pure Go and
// builds everywhere, so its tests run in the ordinary test run.
package dv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/packetio/packetio"
)

// sysfs is the root of the sysfs tree; tests point it at testdata.
var sysfs = "/sys"

// ErrNoDevice is wrapped by every error saying that no mlx5 device backs an
// interface: packetio's own sentinel.
var ErrNoDevice = packetio.ErrNoDevice

// noDevice builds the "no mlx5 device backs that interface" error.
func noDevice(ifname, why string) error {
	return fmt.Errorf("%w: no mlx5 device backs interface %q: %s", ErrNoDevice, ifname, why)
}

// Port names the verbs device and port behind a network interface.
type Port struct {
	IBDev  string // verbs device name, such as mlx5_0
	Port   int    // 1-based port number
	Driver string // the netdev's driver, such as mlx5_core
}

// Resolve finds the verbs device and port behind a network interface by
// reading sysfs: /sys/class/net/IF/device/infiniband/ holds the verbs device,
// and the port is the one whose gid_attrs/ndevs entries name IF (or the only
// port). A refusal wraps ErrNoDevice, or packetio.ErrUnsupported where the
// interface has several verbs devices, or none of a device's ports names it.
func Resolve(ifname string) (Port, error) {
	if ifname == "" || strings.ContainsAny(ifname, "/\x00") || ifname == "." || ifname == ".." {
		return Port{}, noDevice(ifname, "not a valid interface name")
	}
	netdev := filepath.Join(sysfs, "class", "net", ifname)
	if _, err := os.Stat(netdev); err != nil {
		return Port{}, noDevice(ifname, "no such network interface")
	}
	dev := filepath.Join(netdev, "device")
	if _, err := os.Stat(dev); err != nil {
		return Port{}, noDevice(ifname, "it is a virtual interface with no device behind it")
	}
	var p Port
	if link, err := os.Readlink(filepath.Join(dev, "driver")); err == nil {
		p.Driver = filepath.Base(link)
	}
	ents, err := os.ReadDir(filepath.Join(dev, "infiniband"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if p.Driver != "" && p.Driver != "mlx5_core" {
			return Port{}, noDevice(ifname, fmt.Sprintf("it is driven by %s, not mlx5_core", p.Driver))
		}
		return Port{}, noDevice(ifname, "its device has no RDMA (verbs) function; is mlx5_ib loaded?")
	case err != nil:
		return Port{}, noDevice(ifname, fmt.Sprintf("reading its verbs devices: %v", err))
	case len(ents) == 0:
		return Port{}, noDevice(ifname, "its device lists no verbs device; is mlx5_ib loaded?")
	case len(ents) > 1:
		names := make([]string, len(ents))
		for i, e := range ents {
			names[i] = e.Name()
		}
		return Port{}, fmt.Errorf("mlx5: interface %q has %d verbs devices (%s); cannot tell which to use: %w", ifname, len(ents), strings.Join(names, ", "), packetio.ErrUnsupported)
	}
	p.IBDev = ents[0].Name()
	if !strings.HasPrefix(p.IBDev, "mlx5") {
		return Port{}, noDevice(ifname, fmt.Sprintf("its verbs device %s is not an mlx5 device", p.IBDev))
	}
	port, err := portOf(p.IBDev, ifname)
	if err != nil {
		return Port{}, err
	}
	p.Port = port
	return p, nil
}

// portOf finds the port of ibdev whose netdev is ifname.
func portOf(ibdev, ifname string) (int, error) {
	dir := filepath.Join(sysfs, "class", "infiniband", ibdev, "ports")
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return 0, fmt.Errorf("mlx5: verbs device %s of interface %q lists no ports: %w", ibdev, ifname, packetio.ErrUnsupported)
	}
	var ports []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n < 1 {
			continue
		}
		ports = append(ports, n)
	}
	sort.Ints(ports)
	for _, n := range ports {
		ndevs, _ := os.ReadDir(filepath.Join(dir, strconv.Itoa(n), "gid_attrs", "ndevs"))
		for _, g := range ndevs {
			b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(n), "gid_attrs", "ndevs", g.Name()))
			if err == nil && strings.TrimSpace(string(b)) == ifname {
				return n, nil
			}
		}
	}
	if len(ports) == 1 {
		return ports[0], nil
	}
	return 0, fmt.Errorf("%w: none of the %d ports of %s names interface %q", packetio.ErrUnsupported, len(ports), ibdev, ifname)
}
