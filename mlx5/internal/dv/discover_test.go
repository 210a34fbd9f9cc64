package dv

import (
	"errors"
	"strings"
	"testing"

	"github.com/packetio/packetio"
)

func TestResolveFakeSysfs(t *testing.T) {
	old := sysfs
	sysfs = "testdata/sysfs"
	defer func() { sysfs = old }()
	for _, tc := range []struct {
		ifname   string
		want     Port
		errText  string
		noDevice bool
	}{
		{ifname: "cx0", want: Port{IBDev: "mlx5_0", Port: 1, Driver: "mlx5_core"}},
		{ifname: "cx1", want: Port{IBDev: "mlx5_1", Port: 2}}, // second port names it
		{ifname: "ib2", errText: "none of the 2 ports"},
		{ifname: "lo", errText: "virtual interface", noDevice: true},
		{ifname: "eth0", errText: "driven by virtio_net", noDevice: true},
		{ifname: "nomod", errText: "mlx5_ib loaded", noDevice: true},
		{ifname: "missing", errText: "no such network interface", noDevice: true},
		{ifname: "two", errText: "2 verbs devices"},
		{ifname: "rxe", errText: "not an mlx5 device", noDevice: true},
		{ifname: "../net/cx0", errText: "not a valid interface name", noDevice: true},
		{ifname: "", errText: "not a valid interface name", noDevice: true},
	} {
		got, err := Resolve(tc.ifname)
		if tc.errText == "" {
			if err != nil || got != tc.want {
				t.Errorf("Resolve(%q) = %+v, %v; want %+v", tc.ifname, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.errText) {
			t.Errorf("Resolve(%q) error %v, want one mentioning %q", tc.ifname, err, tc.errText)
			continue
		}
		if !errors.Is(err, packetio.ErrUnsupported) && !errors.Is(err, packetio.ErrNoDevice) {
			t.Errorf("Resolve(%q): %v matches neither ErrNoDevice nor ErrUnsupported", tc.ifname, err)
		}
		if errors.Is(err, ErrNoDevice) != tc.noDevice {
			t.Errorf("Resolve(%q): %v: wraps ErrNoDevice %v, want %v", tc.ifname, err, !tc.noDevice, tc.noDevice)
		}
		if tc.noDevice && !strings.Contains(err.Error(), "no mlx5 device backs interface") {
			t.Errorf("Resolve(%q): %v does not say no mlx5 device backs the interface", tc.ifname, err)
		}
	}
}

// On this machine's real sysfs, loopback never has an mlx5 device.
func TestResolveLoopback(t *testing.T) {
	if _, err := Resolve("lo"); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Resolve(lo) = %v", err)
	}
}
