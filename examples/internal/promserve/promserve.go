// Package promserve is the examples' -metrics flag: it serves a Device's
// queue counters at /metrics in the Prometheus text exposition format,
// with the names and labels of the metrics module's Collector
// (internal/devmetrics is the one place both take them from), so the
// examples stay free of the Prometheus client.
package promserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/devmetrics"
)

// Flag is the -metrics flag's usage text.
const Flag = "serve the queues' counters at http://ADDR/metrics in the Prometheus text format (e.g. :9100 or 127.0.0.1:9100; default: off)"

// Server serves /metrics until Close.
type Server struct {
	srv  *http.Server
	addr net.Addr
	done chan error
	once sync.Once
	err  error
}

// Start listens on addr and serves the samples of every source at
// /metrics, read afresh on each scrape. An empty addr serves nothing and
// returns a nil *Server, whose Close and Addr are safe.
func Start(addr string, sources ...devmetrics.Source) (*Server, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", devmetrics.Handler(sources...))
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, addr: ln.Addr(), done: make(chan error, 1)}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address it listens on (with the port the kernel chose for
// ":0"), or "" for a nil Server.
func (s *Server) Addr() string {
	if s == nil {
		return ""
	}
	return s.addr.String()
}

// Close stops serving: before the device closes, so no scrape reads a
// device being torn down. It waits at most a second for scrapes in flight.
// It is idempotent: a second call returns what the first did.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s.err = s.srv.Shutdown(ctx)
		if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && s.err == nil {
			s.err = serr
		}
	})
	return s.err
}

// ForDevice is Start for one device whose interface is iface, and says
// where it serves on w ("metrics: http://ADDR/metrics"). An empty addr
// serves nothing and says nothing.
func ForDevice(addr string, d packetio.Device, iface string, w io.Writer) (*Server, error) {
	s, err := Start(addr, devmetrics.Source{Device: d, Interface: iface})
	if err != nil {
		return nil, fmt.Errorf("-metrics: %w", err)
	}
	if s != nil {
		fmt.Fprintf(w, "metrics: http://%s/metrics\n", s.Addr())
	}
	return s, nil
}
