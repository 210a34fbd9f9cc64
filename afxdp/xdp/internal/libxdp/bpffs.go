package libxdp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

const (
	// bpffsEnv overrides the top bpffs directory, as in libxdp.
	bpffsEnv     = "LIBXDP_BPFFS"
	defaultBPFFS = "/sys/fs/bpf"
)

// resolveTop is the top bpffs directory: the caller's, else $LIBXDP_BPFFS,
// else /sys/fs/bpf; it must be a mounted bpffs.
func resolveTop(bpffs string) (string, error) {
	top := bpffs
	if top == "" {
		top = os.Getenv(bpffsEnv)
	}
	if top == "" {
		top = defaultBPFFS
	}
	var st unix.Statfs_t
	if err := unix.Statfs(top, &st); err != nil {
		return top, fmt.Errorf("%w at %s: %v", ErrNoBPFFS, top, err)
	}
	if uint32(st.Type) != unix.BPF_FS_MAGIC {
		return top, fmt.Errorf("%w at %s: file system type %#x", ErrNoBPFFS, top, uint32(st.Type))
	}
	return top, nil
}

// workDir is <top>/xdp, where libxdp keeps its pins and its lock.
func workDir(top string) string { return filepath.Join(top, "xdp") }

// dispatchDir is where the components of dispatcher id on ifindex are
// pinned.
func dispatchDir(top string, ifindex int, id ebpf.ProgramID) string {
	return filepath.Join(workDir(top), "dispatch-"+strconv.Itoa(ifindex)+"-"+strconv.FormatUint(uint64(id), 10))
}

func progPin(dir string, slot int) string { return filepath.Join(dir, slotName(slot)+"-prog") }
func linkPin(dir string, slot int) string { return filepath.Join(dir, slotName(slot)+"-link") }

// lock takes libxdp's lock: an exclusive flock on <top>/xdp, made (0700)
// if missing when create is set. It returns the unlock function.
func lock(top string, create bool) (func(), error) {
	dir := workDir(top)
	if create {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("make %s: %w", dir, err)
		}
	}
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open the lock directory %s: %w", dir, err)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { unix.Close(fd) }, nil // closing drops the lock
}

// pinProgram pins p at path through a clone, so p's own idea of where it
// is pinned (which cilium/ebpf would move, not copy) is left alone.
func pinProgram(p *ebpf.Program, path string) error {
	c, err := p.Clone()
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Pin(path)
}

// pinAll pins every link and component program of a built dispatcher in a
// new directory dir; on failure nothing of it remains.
func pinAll(dir string, links []link.Link, progs []*ebpf.Program) (err error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("make the pin directory: %w", err)
	}
	defer func() {
		if err != nil {
			removeDir(dir)
		}
	}()
	for i := range links {
		if err := links[i].Pin(linkPin(dir, i)); err != nil {
			return fmt.Errorf("pin the link of slot %d: %w", i, err)
		}
		if err := pinProgram(progs[i], progPin(dir, i)); err != nil {
			return fmt.Errorf("pin the program of slot %d: %w", i, err)
		}
	}
	return nil
}

// removeDir unpins everything in a dispatcher's pin directory and removes
// it, as libxdp's remove_pin_dir does.
func removeDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
