package host

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// fileHandle is a sysfs or procfs file held open read-write. A sysfs file
// stays bound to its device when the caller later leaves the namespace or
// the private mount it was opened through, so Restore can write through it
// from anywhere.
type fileHandle struct {
	what string
	f    *os.File
	// plain is true for a file on an ordinary filesystem (a fake tree in
	// tests), which is truncated after a write so it reads back the way a
	// sysfs or procfs attribute does. Kernel attribute files are never
	// truncated.
	plain bool
}

// writeFault, when set by a test, is consulted before every write through a
// fileHandle; a non-nil result is returned instead of writing.
var writeFault func(path, value string) error

// openFile opens a setting file for reading and writing. A missing file, a
// read-only filesystem and missing permission are *UnavailableError.
func openFile(what, path string) (handle, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, classify(what, err)
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &fs); err != nil {
		f.Close()
		return nil, fmt.Errorf("host: %s: statfs %s: %w", what, path, err)
	}
	plain := fs.Type != unix.SYSFS_MAGIC && fs.Type != unix.PROC_SUPER_MAGIC
	return &fileHandle{what: what, f: f, plain: plain}, nil
}

func (h *fileHandle) read() (string, error) {
	buf := make([]byte, 4096)
	n, err := h.f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("host: read %s (%s): %w", h.what, h.f.Name(), err)
	}
	return strings.TrimSpace(string(buf[:n])), nil
}

func (h *fileHandle) write(v string) error {
	if writeFault != nil {
		if err := writeFault(h.f.Name(), v); err != nil {
			return classify(h.what, fmt.Errorf("write %s: %w", h.f.Name(), err))
		}
	}
	if _, err := h.f.WriteAt([]byte(v), 0); err != nil {
		return classify(h.what, err)
	}
	if h.plain {
		if err := h.f.Truncate(int64(len(v))); err != nil {
			return classify(h.what, err)
		}
	}
	return nil
}

func (h *fileHandle) close() error { return h.f.Close() }

// classify turns the errors that mean "this host cannot do it" into
// *UnavailableError and wraps the rest.
func classify(what string, err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return unavailable(what, "no such setting here", err)
	case errors.Is(err, unix.EROFS):
		return unavailable(what, "the filesystem is read-only", err)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return unavailable(what, "no permission to change it", err)
	case errors.Is(err, unix.EIO):
		// /proc/irq/<n>/smp_affinity_list of a managed interrupt.
		return unavailable(what, "the kernel refused the change (a kernel-managed setting)", err)
	}
	return fmt.Errorf("host: %s: %w", what, err)
}

// netnsID returns the inode of the calling thread's network namespace. The
// goroutine must be locked to its thread for the answer to mean anything
// outside the host namespace.
func netnsID() (uint64, error) {
	fi, err := os.Stat("/proc/thread-self/ns/net")
	if err != nil {
		return 0, fmt.Errorf("host: identify the network namespace: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, errors.New("host: identify the network namespace: no inode")
	}
	return st.Ino, nil
}

// readFile reads a small sysfs or procfs file, trimmed.
func readFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// safeName reports whether an interface name can be joined into a path
// without leaving the directory: any name an interface can have.
func safeName(s string) bool { return ValidInterfaceName(s) }

// ValidInterfaceName reports whether a Linux interface can have the name:
// 1 to 15 bytes (IFNAMSIZ less its NUL), not "." or "..", and no NUL, '/',
// ':' or white space (the kernel's dev_valid_name). Every backend that
// takes an interface name checks it here before any system call.
func ValidInterfaceName(s string) bool {
	return s != "" && len(s) < unix.IFNAMSIZ && s != "." && s != ".." &&
		!strings.ContainsAny(s, "\x00/: \t\n\v\f\r")
}
