package testenv

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// PrivateBPFFS mounts a bpffs of the test's own on a temporary directory
// and names it in LIBXDP_BPFFS, where packetio's libxdp protocol and
// xdp-tools both look for it. When the test ends it fails the test if a
// pin is left in it (empty directories, and the kernel's own maps.debug
// and progs.debug at the top, do not count), then unmounts it: the host's
// /sys/fs/bpf is never touched. It calls t.Setenv, so the test cannot be
// parallel.
func PrivateBPFFS(t testing.TB) string {
	t.Helper()
	NeedBPF(t)
	dir := t.TempDir()
	if err := unix.Mount("bpf", dir, "bpf", 0, "mode=0700"); err != nil {
		CannotRun(t, "mount a bpffs: %v", err)
	}
	t.Setenv("LIBXDP_BPFFS", dir)
	t.Cleanup(func() {
		if left := BPFFSPins(t, dir); len(left) > 0 {
			t.Errorf("left in bpffs: %s", strings.Join(left, ", "))
		}
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// BPFFSPins lists the pins under a bpffs mounted at dir, relative to it,
// leaving out the kernel's own iterators at its top.
func BPFFSPins(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if !d.IsDir() && rel != "maps.debug" && rel != "progs.debug" {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Errorf("walk %s: %v", dir, err)
	}
	return out
}
