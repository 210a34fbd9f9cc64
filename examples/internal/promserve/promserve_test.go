package promserve

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/packetio/packetio/internal/devmetrics"
	"github.com/packetio/packetio/pipe"
)

func TestServesTheText(t *testing.T) {
	a, b, err := pipe.New()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	s, err := Start("127.0.0.1:0", devmetrics.Source{Device: a, Interface: "pipe-a"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != devmetrics.ContentType {
		t.Errorf("Content-Type %q", ct)
	}
	want := `packetio_queue_up{backend="pipe",interface="pipe-a",queue="0",direction="tx"} 1`
	if !strings.Contains(string(body), want+"\n") {
		t.Errorf("scrape lacks %s:\n%s", want, body)
	}
	for range 2 {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}

func TestOffByDefault(t *testing.T) {
	s, err := Start("")
	if s != nil || err != nil || s.Addr() != "" || s.Close() != nil {
		t.Fatalf("Start(\"\") = %v, %v", s, err)
	}
}

func TestBadAddress(t *testing.T) {
	if _, err := Start("256.0.0.1:x"); err == nil {
		t.Fatal("a bad address was taken")
	}
}
