package packetio_test

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/packetio/packetio"
)

func TestOpError(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
		is   error
	}{
		{"sentinel kept", packetio.NewOpError("open", "afxdp", "veth0", packetio.NoQueue, fmt.Errorf("bind: %w", packetio.ErrUnsupported)),
			"open afxdp veth0: bind: packetio: unsupported", packetio.ErrUnsupported},
		{"queue shown", packetio.NewOpError("poll", "afpacket", "veth1", 3, packetio.ErrClosed),
			"poll afpacket veth1 queue 3: packetio: closed", packetio.ErrClosed},
		{"no iface", packetio.NewOpError("transmit", "pipe", "", 0, packetio.ErrBadLength),
			"transmit pipe queue 0: packetio: build returned invalid length", packetio.ErrBadLength},
		{"ENODEV", packetio.NewOpError("open", "afpacket", "nope", packetio.NoQueue, fmt.Errorf("interface nope: %w", syscall.ENODEV)),
			"open afpacket nope: interface nope: no such device", packetio.ErrNoDevice},
		{"EBUSY", packetio.NewOpError("open", "afxdp", "v", 1, syscall.EBUSY), "open afxdp v queue 1: device or resource busy", packetio.ErrBusy},
		{"EPERM", packetio.NewOpError("open", "afxdp", "v", -1, syscall.EPERM), "open afxdp v: operation not permitted", packetio.ErrPermission},
		{"EINVAL", packetio.NewOpError("open", "afxdp", "v", -1, syscall.EINVAL), "open afxdp v: invalid argument", packetio.ErrInvalid},
		{"ENETDOWN is gone", packetio.NewOpError("poll", "afxdp", "v", 0, syscall.ENETDOWN), "poll afxdp v queue 0: network is down", packetio.ErrQueueFailed},
		{"EOPNOTSUPP", packetio.NewOpError("open", "afxdp", "v", -1, syscall.EOPNOTSUPP), "open afxdp v: operation not supported", packetio.ErrUnsupported},
		{"no errno", packetio.NewOpError("open", "dpdk", "net_null0", -1, errors.New("rte_eal_init: -22")), "open dpdk net_null0: rte_eal_init: -22", packetio.ErrSetup},
		{"inner kept", packetio.NewOpError("open", "netstack", "", -1, packetio.NewOpError("open", "afxdp", "v", 2, syscall.EBUSY)), "open afxdp v queue 2: device or resource busy", packetio.ErrBusy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
			var oe *packetio.OpError
			if !errors.As(tc.err, &oe) {
				t.Fatalf("errors.As(%v, *OpError) = false", tc.err)
			}
			if !errors.Is(tc.err, tc.is) {
				t.Errorf("errors.Is(%v, %v) = false", tc.err, tc.is)
			}
		})
	}
	if packetio.NewOpError("open", "afxdp", "v", -1, nil) != nil {
		t.Error("NewOpError(nil) is not nil")
	}
	if !errors.Is(packetio.ErrDeviceGone, packetio.ErrQueueFailed) {
		t.Error("ErrDeviceGone does not match ErrQueueFailed")
	}
}
