//go:build linux

// Command httpserve is a web server on netstack: the standard library's
// net/http, and crypto/tls with -tls, on a user-space TCP/IP stack over a
// packetio device. It serves the files under -dir (GET, HEAD) and stores
// uploads (PUT or POST to /upload/NAME) in -upload, answering the SHA-256
// of what it stored.
//
//	sudo go run ./examples/httpserve -i veth0 -ip 192.0.2.10/24 -dir /srv/www
//	sudo go run ./examples/httpserve -i veth0 -ip 192.0.2.10/24 -dir /srv/www -upload /srv/in -tls
//	curl http://192.0.2.10:8080/index.html
//	curl -T big.iso http://192.0.2.10:8080/upload/big.iso
//
// With no -i it needs root and tests itself: it builds a veth pair between
// two throwaway network namespaces, serves on the stack in one and, from
// the kernel's TCP in the other, fetches and uploads files of -sizes with
// Go's net/http client (and curl, if installed), plain and over TLS, and
// checks every SHA-256 (selftest.go).
//
// Give the stack an address the kernel does not own on -i, with the
// interface's MAC (the default): on afpacket, a tap, the kernel would
// otherwise reset every connection to the stack's port; on afxdp the
// stack would take the kernel's own ARP. httpserve refuses a kernel-owned
// address unless -force. On afxdp the device is steered the stack's port
// on its address, and ARP and neighbour discovery for that address, and
// nothing else (package afxdpsteer).
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afpacket"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/netstack"
	"github.com/packetio/packetio/netstack/afxdpsteer"
)

type options struct {
	backend, iface, ip, gw string
	dir, upload, cert, key string
	sizes                  string
	port                   int
	maxUpload              int64
	tls, force, noCurl     bool
	quiet                  bool // self-test: no line per check
}

func main() {
	var o options
	var maxUpload string
	flag.StringVar(&o.backend, "backend", "", "packetio backend: afpacket (default) or afxdp; the self-test takes a comma-separated list of them and kernel (default: all three)")
	flag.StringVar(&o.iface, "i", "", "interface (default: test yourself on a veth pair in throwaway namespaces)")
	flag.StringVar(&o.ip, "ip", "", "the stack's address with prefix length, e.g. 192.0.2.10/24 (required with -i)")
	flag.StringVar(&o.gw, "gw", "", "default gateway")
	flag.IntVar(&o.port, "port", 8080, "TCP port to serve on")
	flag.StringVar(&o.dir, "dir", ".", "directory whose files GET serves")
	flag.StringVar(&o.upload, "upload", "", "directory PUT and POST to /upload/NAME store into (default: uploads refused)")
	flag.StringVar(&maxUpload, "max-upload", "1G", "largest upload, in bytes (K, M, G: powers of 1024); the self-test's server too")
	flag.BoolVar(&o.tls, "tls", false, "serve HTTPS: with -cert and -key, or a self-signed certificate made at start")
	flag.StringVar(&o.cert, "cert", "", "PEM certificate (chain) for -tls")
	flag.StringVar(&o.key, "key", "", "PEM private key for -tls")
	flag.BoolVar(&o.force, "force", false, "accept an -ip the kernel owns on -i")
	flag.StringVar(&o.sizes, "sizes", "1K,1M,64M", "self-test: file sizes to fetch and upload")
	flag.BoolVar(&o.noCurl, "no-curl", false, "self-test: leave curl out even if it is installed")
	flag.Parse()
	n, err := parseSize(maxUpload)
	o.maxUpload = n
	switch {
	case err != nil:
		err = fmt.Errorf("-max-upload: %w", err)
	case o.port < 1 || o.port > 65535:
		err = fmt.Errorf("-port %d: want 1 to 65535", o.port)
	case o.iface == "":
		if o.backend == "" {
			o.backend = "afpacket,afxdp,kernel"
		}
		_, err = selfTest(o)
	default:
		if o.backend == "" {
			o.backend = "afpacket"
		}
		err = serve(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpserve:", err)
		os.Exit(1)
	}
}

// serve runs the server on -i until interrupted.
func serve(o options) error {
	cfg, err := stackConfig(o)
	if err != nil {
		return err
	}
	h, err := newHandler(o.dir, o.upload, o.maxUpload)
	if err != nil {
		return err
	}
	defer h.Close()
	var tlsCfg *tls.Config
	if o.tls || o.cert != "" || o.key != "" {
		if tlsCfg, err = serverTLS(o, cfg.Addr.Addr()); err != nil {
			return err
		}
	}
	dev, err := openDevice(o.backend, o.iface, cfg.Addr.Addr(), uint16(o.port))
	if err != nil {
		return err
	}
	defer dev.Close()
	s, err := netstack.New(dev, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	l, err := s.Listen("tcp", fmt.Sprintf(":%d", o.port))
	if err != nil {
		return err
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	fmt.Printf("httpserve: %s on %s, %s, MAC %s, MTU %d: %s://%s/ serves %s; uploads: %s\n",
		o.backend, o.iface, cfg.Addr, s.MAC(), s.MTU(), scheme, netip.AddrPortFrom(cfg.Addr.Addr(), uint16(o.port)), o.dir, uploadsTo(o))
	srv := newServer(h, tlsCfg)
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		select {
		case <-sig:
		case <-s.Done(): // the device failed: s.Err says why
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	if tlsCfg != nil {
		err = srv.ServeTLS(l, "", "")
	} else {
		err = srv.Serve(l)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = s.Err()
	}
	return err
}

func uploadsTo(o options) string {
	if o.upload == "" {
		return "refused (no -upload)"
	}
	return fmt.Sprintf("into %s, at most %d bytes each", o.upload, o.maxUpload)
}

// openDevice opens backend on iface for a stack at addr serving ports.
// afpacket is a tap and sees everything; afxdp is steered the ports on
// addr, and ARP and neighbour discovery for addr.
func openDevice(backend, iface string, addr netip.Addr, ports ...uint16) (packetio.Device, error) {
	switch backend {
	case "afpacket":
		// WithGSO: the kernel's 64 KiB super-frames arrive whole and the
		// stack's go out whole. WithLowLatency: a request is handed over
		// at once, not up to 1 ms later with the rest of its ring block.
		return afpacket.Open(iface, afpacket.WithGSO(), afpacket.WithLowLatency())
	case "afxdp":
		steer, err := afxdpsteer.Traffic{Addrs: []netip.Addr{addr}, TCPPorts: ports}.Options()
		if err != nil {
			return nil, err
		}
		return afxdp.Open(iface, append(steer, afxdp.WithTxChecksumOffload())...)
	}
	return nil, fmt.Errorf("-backend %q: want afpacket or afxdp", backend)
}

// stackConfig is the stack's Config for -i: -ip with the interface's MAC,
// refused when the kernel owns -ip there (unless -force).
func stackConfig(o options) (netstack.Config, error) {
	var cfg netstack.Config
	p, err := netip.ParsePrefix(o.ip)
	if err != nil {
		return cfg, fmt.Errorf("-ip %q: want an address with prefix length, e.g. 192.0.2.10/24", o.ip)
	}
	ifc, err := net.InterfaceByName(o.iface)
	if err != nil {
		return cfg, err
	}
	cfg.Addr, cfg.MAC = p, ifc.HardwareAddr
	if o.gw != "" {
		if cfg.Gateway, err = netip.ParseAddr(o.gw); err != nil {
			return cfg, fmt.Errorf("-gw: %w", err)
		}
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return cfg, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(p.Addr().AsSlice()) && !o.force {
			return cfg, fmt.Errorf("the kernel owns %s on %s: give the stack a spare address (or -force)", p.Addr(), o.iface)
		}
	}
	return cfg, nil
}

// newServer is an http.Server for h, with HTTPS when tlsCfg is not nil.
// No read or write timeout: a large file may take minutes; a client that
// sends no request header within 10 s is dropped.
func newServer(h http.Handler, tlsCfg *tls.Config) *http.Server {
	return &http.Server{Handler: h, TLSConfig: tlsCfg, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
}

// handler serves GET and HEAD of the files under one directory and
// stores PUT and POST to /upload/NAME in another. Both are opened as an
// os.Root: no name, ".." or symbolic link takes it outside either.
type handler struct {
	http.Handler
	files, uploads *os.Root
	limit          int64
}

// newHandler serves dir and, unless upload is "", stores uploads of at
// most limit bytes there.
func newHandler(dir, upload string, limit int64) (*handler, error) {
	h := &handler{limit: limit}
	var err error
	if h.files, err = os.OpenRoot(dir); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(h.files.FS()))
	if upload != "" {
		if h.uploads, err = os.OpenRoot(upload); err != nil {
			h.files.Close()
			return nil, err
		}
		mux.HandleFunc("PUT /upload/{name...}", h.store)
		mux.HandleFunc("POST /upload/{name...}", h.store)
	}
	h.Handler = mux
	return h, nil
}

// Close closes the two directories.
func (h *handler) Close() error {
	if h.uploads != nil {
		h.uploads.Close()
	}
	return h.files.Close()
}

// store writes the request body to a temporary file in the upload
// directory, renames it to the name in the URL when the whole body has
// arrived and answers 201 with "SHA256  NAME\n" (sha256sum's format).
func (h *handler) store(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := checkName(name); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	sum, err := h.write(name, http.MaxBytesReader(w, r.Body, h.limit))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		http.Error(w, fmt.Sprintf("upload larger than %d bytes", h.limit), http.StatusRequestEntityTooLarge)
	case err != nil:
		log.Printf("upload %q from %s: %v", name, r.RemoteAddr, err)
		http.Error(w, "upload failed", http.StatusInternalServerError)
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "%x  %s\n", sum, name)
	}
}

// write stores body as name, whole or not at all, and returns its SHA-256.
func (h *handler) write(name string, body io.Reader) ([]byte, error) {
	tmp := ".upload-" + rand.Text()
	f, err := h.uploads.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	sum := sha256.New()
	_, err = io.CopyBuffer(io.MultiWriter(f, sum), body, make([]byte, 256<<10))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = h.uploads.Rename(tmp, name)
	}
	if err != nil {
		h.uploads.Remove(tmp)
		return nil, err
	}
	return sum.Sum(nil), nil
}

// checkName accepts a plain file name: no directory, not hidden (which
// also refuses "." and ".."), no NUL, at most 255 bytes. The os.Root
// would refuse a name leading outside anyway; this refuses it with 400
// and keeps uploads in one flat directory.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("no file name: PUT /upload/NAME")
	case len(name) > 255:
		return errors.New("file name longer than 255 bytes")
	case strings.ContainsAny(name, "/\\\x00"):
		return fmt.Errorf("file name %q: a plain name, without / or \\", name)
	case name[0] == '.':
		return fmt.Errorf("file name %q starts with a dot", name)
	}
	return nil
}

// serverTLS is the TLS configuration for -tls: -cert and -key, or a
// self-signed certificate for addr made now, whose SHA-256 fingerprint it
// prints.
func serverTLS(o options, addr netip.Addr) (*tls.Config, error) {
	if (o.cert == "") != (o.key == "") {
		return nil, errors.New("-cert and -key go together")
	}
	var cert tls.Certificate
	var err error
	if o.cert != "" {
		cert, err = tls.LoadX509KeyPair(o.cert, o.key)
	} else {
		cert, err = selfSigned(addr)
		if err == nil {
			fmt.Printf("self-signed certificate for %s, SHA-256 fingerprint %X\n", addr, sha256.Sum256(cert.Leaf.Raw))
		}
	}
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// selfSigned makes an ECDSA P-256 certificate for addrs, valid for a day.
func selfSigned(addrs ...netip.Addr) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, err
	}
	var ips []net.IP
	for _, a := range addrs {
		ips = append(ips, a.AsSlice())
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "httpserve " + addrs[0].String()},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IPAddresses:           ips,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // its own issuer, so clients can trust it as a root
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// parseSize parses a byte count with an optional K, M or G suffix
// (powers of 1024).
func parseSize(s string) (int64, error) {
	orig := s
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult = 1 << 10
	case strings.HasSuffix(s, "M"):
		mult = 1 << 20
	case strings.HasSuffix(s, "G"):
		mult = 1 << 30
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%q: want a positive byte count up to 1 TiB, e.g. 4096, 64K, 1M or 2G", orig)
	}
	return n * mult, nil
}
