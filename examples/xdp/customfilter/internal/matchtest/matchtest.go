// Package matchtest runs a custom match over a table of frames, in the
// kernel, the way the customfilter match tests do: one filter.Classifier per
// filter (loading a program per packet is slow, and a tight loop of loads
// and frees once wedged this kernel's BPF allocator), every frame through
// it, a verifier rejection a failure with the program listing, any other
// load error "cannot run here".
package matchtest

import (
	"testing"

	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/testenv"
)

// Case is one frame and whether the filter must take it.
type Case struct {
	Name  string
	Frame []byte
	Want  bool
}

// Classifier loads the filter of m, failing the test on a verifier
// rejection and stopping it (skip, or failure under
// PACKETIO_CONFORM_REQUIRED) when programs cannot be loaded here.
func Classifier(t *testing.T, m filter.Match) *filter.Classifier {
	t.Helper()
	testenv.NeedBPF(t)
	c, err := filter.NewClassifier(filter.Program{Matches: []filter.Match{m}})
	if err != nil {
		if filter.IsVerifierError(err) {
			t.Fatalf("the verifier refused %s:\n%+v", m, err)
		}
		testenv.CannotRun(t, "load the filter program for %s: %v", m, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Run checks every case against m through one classifier.
func Run(t *testing.T, m filter.Match, cases []Case) {
	t.Helper()
	c := Classifier(t, m)
	for _, tc := range cases {
		got, err := c.Match(tc.Frame)
		if err != nil {
			t.Errorf("%s: %s: %v", m, tc.Name, err)
			continue
		}
		if got != tc.Want {
			t.Errorf("%s: %s: matched %v, want %v", m, tc.Name, got, tc.Want)
		}
	}
}

// Misses reports how many cases m gets wrong, for showing that a table
// catches a deliberately broken match.
func Misses(t *testing.T, m filter.Match, cases []Case) (wrong []string) {
	t.Helper()
	c := Classifier(t, m)
	for _, tc := range cases {
		got, err := c.Match(tc.Frame)
		if err != nil {
			t.Fatalf("%s: %s: %v", m, tc.Name, err)
		}
		if got != tc.Want {
			wrong = append(wrong, tc.Name)
		}
	}
	return wrong
}

// Hit is a case the filter must take.
func Hit(name string, frame []byte) Case { return Case{Name: name, Frame: frame, Want: true} }

// Miss is a case the filter must leave to the kernel.
func Miss(name string, frame []byte) Case { return Case{Name: name, Frame: frame, Want: false} }
