package afxdp_test

import (
	"os"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/packetiotest"
)

func faultOpener(opts ...afxdp.Option) func(string) (packetio.Device, error) {
	return func(ifname string) (packetio.Device, error) {
		d, err := afxdp.Open(ifname, append([]afxdp.Option{afxdp.WithSteering(testFilter), afxdp.WithFrames(2048)}, opts...)...)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
}

// hookEnv names, for a fault child, whose program its device steers with
// (see hookOpener); unset is packetio's own.
const hookEnv = "AFXDP_FAULT_HOOK"

// coloursEnv, set, makes a fault child open with cache colours.
const coloursEnv = "AFXDP_FAULT_COLOURS"

func TestMain(m *testing.M) {
	opts := []afxdp.Option{afxdp.WithXDP(xdp.WithDriverMode())}
	if os.Getenv(coloursEnv) != "" {
		opts = append(opts, afxdp.WithCacheColours())
	}
	packetiotest.FaultChildMain(hookOpener(os.Getenv(hookEnv), opts...))
	os.Exit(m.Run())
}

// hookOpener is faultOpener with the program named by hook: "" packetio's
// own, "user" the steering program loaded by the caller from SteeringSpec
// and handed over with WithProgram (the device closes them with itself),
// "shared" packetio's in libxdp's dispatcher (WithSharedHook).
func hookOpener(hook string, opts ...afxdp.Option) func(string) (packetio.Device, error) {
	switch hook {
	case "shared":
		return faultOpener(append([]afxdp.Option{afxdp.WithSharedHook(0)}, opts...)...)
	case "user":
	default:
		return faultOpener(opts...)
	}
	return func(ifname string) (packetio.Device, error) {
		spec, err := afxdp.SteeringSpec(testFilter)
		if err != nil {
			return nil, err
		}
		xsks, err := ebpf.NewMap(&ebpf.MapSpec{Name: "user_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 64})
		if err != nil {
			return nil, err
		}
		if err := spec.Instructions.AssociateMap(afxdp.SteeringMapName, xsks); err != nil {
			xsks.Close()
			return nil, err
		}
		prog, err := ebpf.NewProgram(spec)
		if err != nil {
			xsks.Close()
			return nil, err
		}
		d, err := afxdp.Open(ifname, append([]afxdp.Option{afxdp.WithProgram(prog, xsks), afxdp.WithFrames(2048)}, opts...)...)
		if err != nil {
			prog.Close()
			xsks.Close()
			return nil, err
		}
		return userDevice{d, prog, xsks}, nil
	}
}

// userDevice is a device with the caller's program, which it closes after
// itself, as a caller would.
type userDevice struct {
	*afxdp.Device
	prog *ebpf.Program
	xsks *ebpf.Map
}

func (u userDevice) Close() error {
	err := u.Device.Close()
	u.prog.Close()
	u.xsks.Close()
	return err
}

// TestFaults runs the fault half of the contract in both attach modes,
// with packetio's program and with the caller's (WithProgram). The busy
// case puts another process's XDP program on the interface first: Open
// refuses to replace it, whoever's program was to go there.
func TestFaults(t *testing.T) {
	for _, h := range []string{"", "user", "shared"} {
		for _, m := range modes {
			name := m.name
			if h != "" {
				name = h + "-" + m.name
			}
			t.Run(name, func(t *testing.T) {
				t.Setenv(hookEnv, h) // the kill-9 child opens the same way
				var fo []packetiotest.FaultOption
				if h == "shared" {
					testenv.PrivateBPFFS(t) // the child inherits LIBXDP_BPFFS
					fo = sharedLimits()
				}
				runFaults(t, hookOpener(h, m.opt), fo...)
			})
		}
	}
}

// TestFaultsColours runs the fault half of the contract with cache colours
// (native mode): a coloured UMEM dies as a plain one does.
func TestFaultsColours(t *testing.T) {
	t.Setenv(coloursEnv, "1") // the kill-9 child opens the same way
	runFaults(t, hookOpener("", afxdp.WithXDP(xdp.WithDriverMode()), afxdp.WithCacheColours()))
}

// sharedLimits are the fault cases the shared hook cannot offer. A
// process killed while in libxdp's dispatcher leaves its program pinned
// there: the protocol pins every component so that it outlives its loader
// (xdp-loader exits right after loading). Where the kernel refuses freplace
// programs no dispatcher can be built and only the busy case, which is
// refused before one would be, can run.
func sharedLimits() []packetiotest.FaultOption {
	fo := []packetiotest.FaultOption{packetiotest.WithoutFault("kill-9", "libxdp's protocol pins a component in bpffs so that it outlives the process that loaded it")}
	if err := xdp.ProbeSharedHook(); err != nil {
		for _, c := range []string{"device-gone", "link-down-up", "close-wakes-poll", "bad-frame", "kill-9"} {
			fo = append(fo, packetiotest.WithoutFault(c, "kernel limit: "+err.Error()))
		}
	}
	return fo
}

func runFaults(t *testing.T, open func(string) (packetio.Device, error), fo ...packetiotest.FaultOption) {
	packetiotest.RunFaults(t, func(t *testing.T) *packetiotest.FaultEnv {
		testenv.NeedBPF(t)
		e := packetiotest.VethEnv(t, open)
		e.Occupy = e.OccupyXDP
		return &e.FaultEnv
	}, fo...)
}
