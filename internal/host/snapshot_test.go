package host

import (
	"reflect"
	"testing"
)

func TestSnapshotDiff(t *testing.T) {
	a := Snapshot{"sysfs gro_flush_timeout": "0", "irq 24": "0-1", "private flags": "none"}
	b := Snapshot{"sysfs gro_flush_timeout": "20000", "irq 24": "0-1", "irq 25": "1"}
	want := []string{
		"irq 25: new -> 1",
		"private flags: none -> gone",
		"sysfs gro_flush_timeout: 0 -> 20000",
	}
	if got := a.Diff(b); !reflect.DeepEqual(got, want) {
		t.Errorf("Diff = %q, want %q", got, want)
	}
	if got := a.Diff(a); got != nil {
		t.Errorf("Diff with itself = %q", got)
	}
}
