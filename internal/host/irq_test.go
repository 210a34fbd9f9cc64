package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// irqSummary prints what FindIRQs found compactly: queue/dir=irq@cpus.
func irqSummary(irqs []QueueIRQ) string {
	var parts []string
	for _, q := range irqs {
		parts = append(parts, fmt.Sprintf("%d/%s=%d@%s", q.Queue, q.Dir, q.IRQ, formatCPUList(q.CPUs)))
	}
	return strings.Join(parts, " ")
}

// TestFindIRQsFixtures runs discovery over fake /proc and sysfs trees laid
// out as each driver does.
func TestFindIRQsFixtures(t *testing.T) {
	tests := []struct {
		fixture, ifname string
		want            string
		wantReason      string
	}{
		// Four channels of the first port; async EQ and the second port's
		// interrupts left out; IRQ 123 falls back to smp_affinity_list.
		{"mlx5.txt", "enp65s0f0np0", "0/rxtx=121@0 1/rxtx=122@1 2/rxtx=123@2 3/rxtx=124@3", ""},
		// The link interrupt "eth1" and the other port's eth2-TxRx-0 are
		// not queues of eth1; IRQ 63 has no affinity files at all.
		{"ixgbe.txt", "eth1", "0/rxtx=60@0 1/rxtx=61@1 2/rxtx=62@6", ""},
		// ena-mgmnt is the admin queue.
		{"ena.txt", "ens5", "0/rxtx=28@0 1/rxtx=29@1 2/rxtx=30@2 3/rxtx=31@3", ""},
		// Found by walking up from virtio2 to its PCI function; the
		// config interrupt and virtio3's rx/tx are not eth0's queues.
		{"virtio_net.txt", "eth0", "0/rx=38@1 0/tx=39@0", ""},
		{"veth.txt", "veth0", "", "no per-queue interrupt found: a virtual interface without a bus device"},
		{"veth.txt", "nonapi0", "", "no per-queue interrupt found"},
		{"veth.txt", "absent0", "", "the interface is not in"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture+"/"+tt.ifname, func(t *testing.T) {
			root := fakeTree(t, tt.fixture)
			irqs, err := FindIRQs(filepath.Join(root, "sys"), filepath.Join(root, "proc"), tt.ifname)
			if tt.wantReason != "" {
				var u *UnavailableError
				if !errors.As(err, &u) || !strings.HasPrefix(u.Reason, tt.wantReason) {
					t.Fatalf("FindIRQs = %v, %v; want an *UnavailableError starting %q", irqSummary(irqs), err, tt.wantReason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := irqSummary(irqs); got != tt.want {
				t.Fatalf("FindIRQs = %s\nwant       %s", got, tt.want)
			}
		})
	}
}

// TestFindIRQsVirtioString checks the Info line of a found interrupt.
func TestFindIRQsVirtioString(t *testing.T) {
	root := fakeTree(t, "virtio_net.txt")
	irqs, err := FindIRQs(filepath.Join(root, "sys"), filepath.Join(root, "proc"), "eth0")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := irqs[0].String(), "queue 0 rx: irq 38 virtio2-input.0 on CPU 1"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	if got := (QueueIRQ{Queue: 1, Dir: Tx, IRQ: 9, Name: "x"}).String(); got != "queue 1 tx: irq 9 x on no known CPU" {
		t.Fatalf("String without CPUs = %q", got)
	}
}

// TestFindIRQsUnknownDriver: a driver whose names are not known is an
// honest reason, and so is a known driver with no MSI interrupts.
func TestFindIRQsUnknownDriver(t *testing.T) {
	root := fakeTree(t, "ixgbe.txt")
	sys := filepath.Join(root, "sys")
	drv := filepath.Join(sys, "devices/pci0000:00/0000:00:02.0/0000:03:00.0/driver")
	if err := os.Remove(drv); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../bus/pci/drivers/frobnic", drv); err != nil {
		t.Fatal(err)
	}
	_, err := FindIRQs(sys, filepath.Join(root, "proc"), "eth1")
	var u *UnavailableError
	if !errors.As(err, &u) || u.Reason != "no per-queue interrupt found: interrupt names of driver frobnic are not recognised" {
		t.Fatalf("unknown driver: %v", err)
	}
	if err := os.Remove(drv); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../bus/pci/drivers/ixgbe", drv); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(sys, "devices/pci0000:00/0000:00:02.0/0000:03:00.0/msi_irqs")); err != nil {
		t.Fatal(err)
	}
	_, err = FindIRQs(sys, filepath.Join(root, "proc"), "eth1")
	if !errors.As(err, &u) || u.Reason != "no per-queue interrupt found: driver ixgbe has no MSI interrupts" {
		t.Fatalf("no MSI interrupts: %v", err)
	}
	if _, err := FindIRQs(sys, filepath.Join(root, "proc"), "../eth1"); err == nil || errors.Is(err, ErrUnavailable) {
		t.Fatalf("a bad name gave %v", err)
	}
}

// TestMatchers covers the naming of every recognised driver, including the
// ones without a fixture tree.
func TestMatchers(t *testing.T) {
	tests := []struct {
		driver, ifname, dev, name string
		q                         int
		dir                       Direction
		ok                        bool
	}{
		{"mlx5_core", "p0", "0000:41:00.0", "mlx5_comp7@pci:0000:41:00.0", 7, RxTx, true},
		{"mlx5_core", "p0", "0000:41:00.0", "mlx5_comp7@pci:0000:41:00.1", 0, 0, false},
		{"mlx5_core", "p0", "0000:41:00.0", "mlx5_async0@pci:0000:41:00.0", 0, 0, false},
		{"mlx5_core", "p0", "0000:41:00.0", "mlx5_comp@pci:0000:41:00.0", 0, 0, false},
		{"mlx4_core", "p0", "0000:04:00.0", "mlx4-3@pci:0000:04:00.0", 3, RxTx, true},
		{"mlx4_core", "p0", "0000:04:00.0", "mlx4-async@pci:0000:04:00.0", 0, 0, false},
		{"ixgbe", "eth0", "", "eth0-TxRx-12", 12, RxTx, true},
		{"ixgbe", "eth0", "", "veth0-TxRx-1", 0, 0, false},
		{"ixgbe", "eth0", "", "eth0-TxRx-", 0, 0, false},
		{"ixgbe", "eth0", "", "eth0-TxRx-1x", 0, 0, false},
		{"ixgbe", "eth0", "", "eth0", 0, 0, false},
		{"igb", "eth0", "", "eth0-rx-1", 1, Rx, true},
		{"igb", "eth0", "", "eth0-tx-1", 1, Tx, true},
		{"igc", "enp3s0", "", "enp3s0-TxRx-3", 3, RxTx, true},
		{"i40e", "eth3", "", "i40e-eth3-TxRx-0", 0, RxTx, true},
		{"ice", "ens801f0", "", "ice-ens801f0-TxRx-5", 5, RxTx, true},
		{"bnxt_en", "enp1s0f0np0", "", "enp1s0f0np0-TxRx-7", 7, RxTx, true},
		{"ena", "ens5", "", "ens5-Tx-Rx-2", 2, RxTx, true},
		{"ena", "ens5", "", "ena-mgmnt@pci:0000:00:05.0", 0, 0, false},
		{"ena", "ens5", "", "ens5-TxRx-2", 0, 0, false},
		{"virtio_net", "eth0", "virtio2", "virtio2-input.3", 3, Rx, true},
		{"virtio_net", "eth0", "virtio2", "virtio2-output.3", 3, Tx, true},
		{"virtio_net", "eth0", "virtio2", "virtio2-config", 0, 0, false},
		{"virtio_net", "eth0", "virtio2", "virtio2-virtqueues", 0, 0, false},
		{"virtio_net", "eth0", "virtio2", "virtio20-input.0", 0, 0, false},
		{"virtio_net", "eth0", "virtio2", "virtio2-input.99999999", 0, 0, false},
	}
	for _, tt := range tests {
		m := matcherFor(tt.driver, tt.ifname, tt.dev)
		if m == nil {
			t.Fatalf("no matcher for %s", tt.driver)
		}
		q, dir, ok := m(tt.name)
		if ok != tt.ok || (ok && (q != tt.q || dir != tt.dir)) {
			t.Errorf("%s %q: %d %v %v; want %d %v %v", tt.driver, tt.name, q, dir, ok, tt.q, tt.dir, tt.ok)
		}
	}
	for _, d := range []string{"veth", "", "e1000", "virtio-pci"} {
		if matcherFor(d, "eth0", "x") != nil {
			t.Errorf("driver %q has a matcher", d)
		}
	}
}

func TestParseInterrupts(t *testing.T) {
	text := `           CPU0       CPU1
  0:         44          0   IO-APIC   2-edge      timer
  9:          0          0   IO-APIC   9-fasteoi   acpi
 16:          5          0   IO-APIC  16-fasteoi   ehci_hcd:usb1, uhci_hcd:usb2
 38:          0       1745 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
NMI:          0          0   Non-maskable interrupts
ERR:          0
garbage
-1:          0  x
`
	got, err := parseInterrupts(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{0: "timer", 9: "acpi", 16: "uhci_hcd:usb2", 38: "virtio2-input.0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("parseInterrupts = %v, want %v", got, want)
	}
}

func TestForQueue(t *testing.T) {
	irqs := []QueueIRQ{
		{Queue: 0, Dir: Rx, IRQ: 38}, {Queue: 0, Dir: Tx, IRQ: 39},
		{Queue: 1, Dir: RxTx, IRQ: 40},
		{Queue: 2, Dir: Tx, IRQ: 41},
	}
	tests := []struct {
		q       int
		receive bool
		irq     int
		ok      bool
	}{
		{0, true, 38, true}, {0, false, 39, true},
		{1, true, 40, true}, {1, false, 40, true},
		{2, true, 41, true}, // only a transmit interrupt: better than nothing
		{3, true, 0, false},
	}
	for _, tt := range tests {
		got, ok := ForQueue(irqs, tt.q, tt.receive)
		if ok != tt.ok || got.IRQ != tt.irq {
			t.Errorf("ForQueue(%d, receive=%v) = irq %d %v; want %d %v", tt.q, tt.receive, got.IRQ, ok, tt.irq, tt.ok)
		}
	}
	if Direction(9).String() != "Direction(9)" || RxTx.String() != "rxtx" {
		t.Error("Direction.String")
	}
}

// TestMoveIRQFake moves a fake interrupt through two journals and back; it
// never writes a real /proc/irq file.
func TestMoveIRQFake(t *testing.T) {
	root := fakeTree(t, "virtio_net.txt")
	proc := filepath.Join(root, "proc")
	file := filepath.Join(proc, "irq/38/smp_affinity_list")
	d := t.TempDir()
	j1, j2, j3 := Journal{RunDir: d}, Journal{RunDir: d}, Journal{RunDir: d}
	for _, j := range []*Journal{&j1, &j2, &j3} {
		restoreOnCleanup(t, j)
	}
	if changed, err := MoveIRQ(&j1, proc, 38, []int{0, 1}); err != nil || changed {
		t.Fatalf("moving to where it is (0-1) = %v, %v; want no change", changed, err)
	}
	if err := j1.Restore(); err != nil {
		t.Fatal(err)
	}
	changed, err := MoveIRQ(&j1, proc, 38, []int{0})
	if err != nil || !changed {
		t.Fatalf("MoveIRQ = %v, %v", changed, err)
	}
	if got := readTrim(t, file); got != "0" {
		t.Fatalf("smp_affinity_list = %q, want 0", got)
	}
	if got := fmt.Sprint(j1.Changes()); got != "[smp_affinity_list of irq 38: 0-1 -> 0]" {
		t.Fatalf("Changes = %s", got)
	}
	if changed, err := MoveIRQ(&j2, proc, 38, []int{0}); err != nil || changed {
		t.Fatalf("second fleet, same CPU = %v, %v", changed, err)
	}
	if _, err := MoveIRQ(&j3, proc, 38, []int{1}); !errors.Is(err, ErrConflict) {
		t.Fatalf("third fleet, other CPU = %v; want ErrConflict", err)
	}
	if err := j1.Restore(); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, file); got != "0" {
		t.Fatalf("after the first release smp_affinity_list = %q, want 0", got)
	}
	if err := j2.Restore(); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, file); got != "0-1" {
		t.Fatalf("after the last release smp_affinity_list = %q, want 0-1", got)
	}
	for _, bad := range [][]int{nil, {-1}, {MaxCPU + 1}} {
		if _, err := MoveIRQ(&j1, proc, 38, bad); err == nil {
			t.Errorf("MoveIRQ to %v succeeded", bad)
		}
	}
	if _, err := MoveIRQ(&j1, proc, -2, []int{0}); err == nil {
		t.Error("MoveIRQ of irq -2 succeeded")
	}
	if _, err := MoveIRQ(&j1, proc, 999, []int{0}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("MoveIRQ of a missing irq = %v; want ErrUnavailable", err)
	}
}
