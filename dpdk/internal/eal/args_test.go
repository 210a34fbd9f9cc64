package eal

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestArgv(t *testing.T) {
	pid := "packetio" + strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		name string
		a    Args
		want string
	}{
		{"defaults", Args{}, "packetio --no-telemetry --no-pci --no-shconf --file-prefix " + pid + " --in-memory"},
		{"no huge", Args{NoHuge: true}, "packetio --no-telemetry --no-pci --no-shconf --file-prefix " + pid + " --no-huge -m 256"},
		{"no huge with memory", Args{NoHuge: true, Memory: 128, FilePrefix: "t1"}, "packetio --no-telemetry --no-pci --no-shconf --file-prefix t1 --no-huge -m 128"},
		{"hugepages with memory", Args{Memory: 1024, FilePrefix: "x"}, "packetio --no-telemetry --no-pci --no-shconf --file-prefix x --in-memory -m 1024"},
		{"lcores and log", Args{NoHuge: true, FilePrefix: "p", Lcores: "0", LogLevel: "lib.eal:debug"}, "packetio --no-telemetry --no-pci --no-shconf --file-prefix p --no-huge -m 256 -l 0 --log-level=lib.eal:debug"},
		{"extra last", Args{NoHuge: true, FilePrefix: "p", Extra: []string{"--legacy-mem", "-l", "1"}}, "packetio --no-telemetry --no-pci --no-shconf --file-prefix p --no-huge -m 256 --legacy-mem -l 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(tc.a.Argv(), " "); got != tc.want {
				t.Fatalf("Argv =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}

func TestArgvNeverCombinesNoHugeWithInMemory(t *testing.T) {
	argv := Args{NoHuge: true, Memory: 64}.Argv()
	if slices.Contains(argv, "--in-memory") {
		t.Fatal("--no-huge with --in-memory: DPDK refuses the pair")
	}
}

func TestValidate(t *testing.T) {
	for _, a := range []Args{{Memory: -1}, {FilePrefix: "a/b"}, {Extra: []string{"x\x00"}}} {
		if a.Validate() == nil {
			t.Errorf("%+v accepted", a)
		}
	}
	if err := (Args{NoHuge: true, Memory: 64, FilePrefix: "ok"}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestIsPCIAndDriverOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pci    bool
		driver string
	}{
		{"0000:3b:00.0", true, ""},
		{"3b:00.1", true, ""},
		{"0000:3b:00.0,rx_vec_en=0", true, ""},
		{"0000:3b:00.8", false, ""},
		{"net_null0", false, "net_null"},
		{"net_af_packet0,iface=veth0", false, "net_af_packet"},
		{"net_af_xdp12,iface=a:b.c", false, "net_af_xdp"},
		{"eth0", false, ""},
		{"zz:00.0", false, ""},
	} {
		if IsPCI(tc.name) != tc.pci || DriverOf(tc.name) != tc.driver {
			t.Errorf("%q: IsPCI %v DriverOf %q; want %v %q", tc.name, IsPCI(tc.name), DriverOf(tc.name), tc.pci, tc.driver)
		}
	}
	if DeviceName("net_af_packet0,iface=x") != "net_af_packet0" {
		t.Error("DeviceName")
	}
}
