package testenv

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// EpollWatchers counts this process's epoll instances, other than fd
// itself, that watch descriptor fd: the kernel's own record, the tfd lines
// of /proc/self/fdinfo.
func EpollWatchers(t testing.TB, fd int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(fd)
	n := 0
	for _, e := range ents {
		if e.Name() == want {
			continue
		}
		if link, _ := os.Readlink("/proc/self/fd/" + e.Name()); link != "anon_inode:[eventpoll]" {
			continue
		}
		b, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue // closed since the listing
		}
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "tfd:" && f[1] == want {
				n++
			}
		}
	}
	return n
}
