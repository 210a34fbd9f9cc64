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
	if strings.Contains(out.String(), "XDP mode") || strings.Contains(out.String(), "steering") {
		t.Errorf("afpacket printed afxdp rows:\n%s", out.String())
	}
}

// TestInfoOnAFXDP: two queues on a two-queue veth of its own, the
// datapath's decisions printed, and a filter that takes nothing.
func TestInfoOnAFXDP(t *testing.T) {
	testenv.NeedBPF(t)
	var out bytes.Buffer
	if err := run("afxdp", "", 2, &out); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	for _, want := range []string{"(2 queues each way)", "backend                      afxdp", "2 transmit, 2 receive",
		"steering                     ethertype 0x88b6", "XDP mode                     native, driver veth, 2 of 2 queues bound",
		"XDP zero-copy                no", "XDP filter                   ethertype/0x88b6", "arrival stamps               off (afxdp.WithTimestamps", "busy-poll                    off",
		"host tuning", "afxdp Info                   ", "rx 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
