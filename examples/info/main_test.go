package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/packetio/packetio/internal/testenv"
)

func TestInfoOnOwnPair(t *testing.T) {
	testenv.NeedRoot(t)
	var out bytes.Buffer
	if err := run("afpacket", "", 2, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"backend                      afpacket", "2 transmit, 2 receive", "receive timestamps           yes", "rx 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
