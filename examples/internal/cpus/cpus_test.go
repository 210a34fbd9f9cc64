//go:build linux

package cpus

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	ok, err := Allowed()
	if err != nil || len(ok) == 0 {
		t.Fatalf("Allowed() = %v, %v", ok, err)
	}
	for _, tc := range []struct {
		in      string
		want    []int
		wantErr string
	}{
		{in: "", want: nil},
		{in: "0", want: []int{0}},
		{in: "x", wantErr: "-cpu"},
		{in: "999", wantErr: "no CPU 999"},
		{in: "0,1000", wantErr: "no CPU 1000"},
	} {
		got, err := Parse(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestFor(t *testing.T) {
	for _, tc := range []struct {
		list    []int
		i, want int
	}{{nil, 0, -1}, {[]int{1}, 3, 1}, {[]int{1, 0}, 1, 0}, {[]int{1, 0}, 2, 1}} {
		if got := For(tc.list, tc.i); got != tc.want {
			t.Errorf("For(%v, %d) = %d, want %d", tc.list, tc.i, got, tc.want)
		}
	}
}

func TestPin(t *testing.T) {
	ok, _ := Allowed()
	cpu := ok[len(ok)-1]
	done := make(chan error, 1)
	go func() {
		if err := Pin(cpu); err != nil {
			done <- err
			return
		}
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			done <- err
			return
		}
		if set.Count() != 1 || !set.IsSet(cpu) {
			t.Errorf("after Pin(%d) the thread runs on %d CPUs", cpu, set.Count())
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
