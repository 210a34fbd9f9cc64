//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/netstack"
)

// The self-test's addresses and ports: the veth ends are 10.9.0.1 (A) and
// 10.9.0.2 (B); the stack on A is 10.9.0.3.
var (
	addrA     = netip.MustParsePrefix("10.9.0.1/24")
	addrB     = netip.MustParsePrefix("10.9.0.2/24")
	stackAddr = netip.MustParsePrefix("10.9.0.3/24")
)

const (
	httpPort  = 8080
	httpsPort = 8443
	// transferTimeout bounds every request and curl run.
	transferTimeout = 2 * time.Minute
)

// check is one verified transfer.
type check struct {
	backend, client, scheme, method, proto string
	size                                   int64
	status                                 int
	want, got                              string // hex SHA-256: of the file sent, of what arrived (or was stored)
	took                                   time.Duration
}

// ok reports whether the transfer arrived whole.
func (c check) ok() bool { return c.want == c.got && c.status/100 == 2 }

func (c check) String() string {
	verdict := "sha256 ok"
	if !c.ok() {
		verdict = fmt.Sprintf("MISMATCH: sent sha256 %.16s, got %.16s", c.want, c.got)
	}
	return fmt.Sprintf("%-8s %-4s %-5s %-4s %8s %10.2f ms %7.3f Gbit/s  %d %-8s %s",
		c.backend, c.client, c.scheme, c.method, sizeName(c.size), float64(c.took.Microseconds())/1e3,
		float64(c.size)*8/c.took.Seconds()/1e9, c.status, c.proto, verdict)
}

// bed is what every backend's run shares.
type bed struct {
	o      options
	pair   *netns.Pair
	work   string // temporary: files/ served, uploads/ stored into, cert.pem for curl
	sizes  []int64
	sums   map[int64]string // hex SHA-256 of the file of each size
	cert   tls.Certificate
	roots  *x509.CertPool
	curl   bool
	checks []check
}

// selfTest serves on a stack over each backend of -backend on a fresh
// veth pair, and fetches and uploads files of -sizes from the other end
// with Go's net/http client (and curl), over HTTP and HTTPS, checking
// every SHA-256. It returns every check made; the error is the first
// failure. Everything it makes (namespaces, link, XDP program, files) is
// gone when it returns, or when it is interrupted.
func selfTest(o options) ([]check, error) {
	backends, err := backendList(o.backend)
	if err != nil {
		return nil, err
	}
	b := &bed{o: o, sums: map[int64]string{}}
	for _, s := range strings.Split(o.sizes, ",") {
		n, err := parseSize(s)
		if err != nil {
			return nil, fmt.Errorf("-sizes: %w", err)
		}
		if !slices.Contains(b.sizes, n) {
			b.sizes = append(b.sizes, n)
		}
	}
	if b.work, err = os.MkdirTemp("", "httpserve-"); err != nil {
		return nil, err
	}
	defer os.RemoveAll(b.work)
	if b.pair, err = netns.Create(netns.WithAddrs(addrA, addrB)); err != nil {
		return nil, err
	}
	defer b.pair.Close()
	stop := cleanUpOnInterrupt(b.pair, b.work)
	defer stop()
	if err := b.prepare(); err != nil {
		return nil, err
	}
	clients := "Go net/http"
	if b.curl {
		clients += " and curl"
	}
	fmt.Printf("httpserve self-test: backend %s, veth %s (A) <-> %s (B); mode: server on netstack on A at %s (kernel: A's own TCP at %s), http :%d, https :%d (self-signed); clients: %s on B's kernel TCP\n",
		strings.Join(backends, ","), b.pair.A.Link, b.pair.B.Link, stackAddr.Addr(), addrA.Addr(), httpPort, httpsPort, clients)
	for _, backend := range backends {
		if err := b.run(backend); err != nil {
			return b.checks, fmt.Errorf("%s: %w", backend, err)
		}
	}
	fmt.Printf("%d checks, all sha256 ok\n", len(b.checks))
	return b.checks, nil
}

// backendList splits -backend for the self-test.
func backendList(s string) ([]string, error) {
	list := strings.Split(s, ",")
	for i, b := range list {
		if b != "afpacket" && b != "afxdp" && b != "kernel" {
			return nil, fmt.Errorf("-backend %q: want a comma-separated list of afpacket, afxdp and kernel", s)
		}
		if slices.Contains(list[:i], b) {
			return nil, fmt.Errorf("-backend %q: %s twice", s, b)
		}
	}
	return list, nil
}

// cleanUpOnInterrupt removes the pair and the work directory and exits
// when the process is interrupted, until stop is called.
func cleanUpOnInterrupt(pair *netns.Pair, work string) (stop func()) {
	sig := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(sig, os.Interrupt)
	go func() {
		select {
		case <-sig:
			pair.Close()
			os.RemoveAll(work)
			os.Exit(130)
		case <-done:
		}
	}()
	return func() { signal.Stop(sig); close(done) }
}

// prepare writes the files to serve, the certificate and its PEM for
// curl, and makes the upload directory.
func (b *bed) prepare() error {
	for _, d := range []string{"files", "uploads"} {
		if err := os.Mkdir(filepath.Join(b.work, d), 0o755); err != nil {
			return err
		}
	}
	for _, n := range b.sizes {
		var seed [32]byte // the file of n bytes is the same in every run
		binary.LittleEndian.PutUint64(seed[:], uint64(n))
		sum, err := writeRandom(filepath.Join(b.work, "files", fileName(n)), n, rand.NewChaCha8(seed))
		if err != nil {
			return err
		}
		b.sums[n] = sum
	}
	var err error
	if b.cert, err = selfSigned(stackAddr.Addr(), addrA.Addr()); err != nil {
		return err
	}
	b.roots = x509.NewCertPool()
	b.roots.AddCert(b.cert.Leaf)
	if _, err := exec.LookPath("curl"); err == nil && !b.o.noCurl {
		b.curl = true
		pemCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.cert.Leaf.Raw})
		return os.WriteFile(filepath.Join(b.work, "cert.pem"), pemCert, 0o644)
	}
	return nil
}

// writeRandom writes n bytes from r to a new file and returns their
// SHA-256.
func writeRandom(name string, n int64, r io.Reader) (string, error) {
	f, err := os.Create(name)
	if err != nil {
		return "", err
	}
	sum := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, sum), 1<<20)
	_, err = io.CopyN(w, r, n)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return hex.EncodeToString(sum.Sum(nil)), err
}

func fileName(n int64) string { return fmt.Sprintf("file-%d", n) }

// sizeName is n in KiB, MiB or bytes, whichever is whole.
func sizeName(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// run serves HTTP and HTTPS on a stack over backend on A (or, for
// "kernel", on A's own TCP at its address), and makes every check against
// it from B.
func (b *bed) run(backend string) error {
	addr, listen := addrA.Addr(), b.listenKernel
	if backend == "kernel" {
		if err := b.pair.B.SetFeature("tx", true); err != nil {
			return err
		}
	} else {
		dev, s, err := b.startStack(backend)
		if err != nil {
			return err
		}
		defer dev.Close()
		defer s.Close()
		defer func() {
			st := s.Stats()
			fmt.Printf("%-8s stack: rx %d packets, tx %d packets, bad checksums %d, tx dropped %d, tcp retransmits %d\n",
				backend, st.RxPackets, st.TxPackets, st.RxBadChecksum, st.TxDropped, st.TCPRetransmits)
		}()
		addr = stackAddr.Addr()
		listen = func(port int) (net.Listener, error) { return s.Listen("tcp4", fmt.Sprintf(":%d", port)) }
	}
	limit := b.o.maxUpload
	if limit <= 0 {
		limit = 1 << 40
	}
	h, err := newHandler(filepath.Join(b.work, "files"), filepath.Join(b.work, "uploads"), limit)
	if err != nil {
		return err
	}
	defer h.Close()
	// One server per listener: a server whose Serve runs before its
	// ServeTLS never sets up HTTP/2, yet ServeTLS offers it, and closes
	// every connection a client (curl) negotiates HTTP/2 on.
	var serving sync.WaitGroup
	defer serving.Wait()
	for _, port := range []int{httpPort, httpsPort} {
		l, err := listen(port)
		if err != nil {
			return err
		}
		if port == httpPort {
			srv := newServer(h, nil)
			defer srv.Close()
			serving.Go(func() { srv.Serve(l) })
		} else {
			srv := newServer(h, &tls.Config{Certificates: []tls.Certificate{b.cert}})
			defer srv.Close()
			serving.Go(func() { srv.ServeTLS(l, "", "") })
		}
	}
	goClient := b.goClient()
	defer goClient.CloseIdleConnections()
	for _, scheme := range []string{"http", "https"} {
		port := httpPort
		if scheme == "https" {
			port = httpsPort
		}
		base := fmt.Sprintf("%s://%s", scheme, netip.AddrPortFrom(addr, uint16(port)))
		for _, n := range b.sizes {
			c := check{backend: backend, scheme: scheme, size: n, want: b.sums[n]}
			if err := b.transfer(c, base, goClient); err != nil {
				return err
			}
		}
	}
	return nil
}

// startStack opens backend on A and starts a stack on it. The caller
// closes the stack, then the device.
func (b *bed) startStack(backend string) (packetio.Device, *netstack.Stack, error) {
	// On a veth, B's kernel leaves TCP checksums for the "hardware" to
	// finish; AF_XDP would hand the stack such frames as they are, so B
	// finishes its own checksums while the stack is on afxdp.
	if err := b.pair.B.SetFeature("tx", backend != "afxdp"); err != nil {
		return nil, nil, err
	}
	var dev packetio.Device
	if err := b.pair.A.Do(func() (err error) {
		dev, err = openDevice(backend, b.pair.A.Link, stackAddr.Addr(), httpPort, httpsPort)
		return err
	}); err != nil {
		return nil, nil, err
	}
	s, err := netstack.New(dev, netstack.Config{Addr: stackAddr, MAC: b.pair.A.MAC})
	if err != nil {
		dev.Close()
		return nil, nil, err
	}
	return dev, s, nil
}

// listenKernel listens on port at A's own address, in A's namespace.
func (b *bed) listenKernel(port int) (l net.Listener, err error) {
	err = b.pair.A.Do(func() error {
		l, err = net.Listen("tcp4", netip.AddrPortFrom(addrA.Addr(), uint16(port)).String())
		return err
	})
	return l, err
}

// transfer fetches the file of c.size from base and uploads it back, with
// the Go client and with curl, recording a check for each.
func (b *bed) transfer(c check, base string, goClient *http.Client) error {
	file := filepath.Join(b.work, "files", fileName(c.size))
	type step struct {
		client, method string
		do             func(c *check, url string) error
	}
	steps := []step{
		{"go", "GET", func(c *check, url string) error { return goGet(goClient, c, url) }},
		{"go", "PUT", func(c *check, url string) error { return goPut(goClient, c, url, file) }},
	}
	if b.curl {
		steps = append(steps,
			step{"curl", "GET", func(c *check, url string) error { return b.curlGet(c, url) }},
			step{"curl", "POST", func(c *check, url string) error { return b.curlPost(c, url, file) }})
	}
	for _, st := range steps {
		c := c // a fresh check per step
		c.client, c.method = st.client, st.method
		url := base + "/" + fileName(c.size)
		stored := ""
		if c.method != "GET" {
			stored = fmt.Sprintf("%s-%s-%s-%d", c.backend, c.client, c.scheme, c.size)
			url = base + "/upload/" + stored
		}
		start := time.Now()
		err := st.do(&c, url)
		c.took = time.Since(start)
		if err == nil && stored != "" {
			err = b.checkStored(&c, stored)
		}
		if err != nil {
			return fmt.Errorf("%s %s %s %s: %w", c.client, c.scheme, c.method, sizeName(c.size), err)
		}
		b.checks = append(b.checks, c)
		if !b.o.quiet {
			fmt.Println(c)
		}
		if !c.ok() {
			return fmt.Errorf("%s", c)
		}
	}
	return nil
}

// checkStored compares what the server stored under name with what was
// sent, and removes it.
func (b *bed) checkStored(c *check, name string) error {
	path := filepath.Join(b.work, "uploads", name)
	defer os.Remove(path)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != c.got {
		return fmt.Errorf("the server answered sha256 %s and stored %s", c.got, got)
	}
	return nil
}

// goClient is Go's net/http client on B's kernel TCP: it dials inside B's
// namespace and trusts the stack's self-signed certificate.
func (b *bed) goClient() *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Timeout: transferTimeout,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
				err = b.pair.B.Do(func() error {
					c, err = d.DialContext(ctx, network, addr)
					return err
				})
				return c, err
			},
			TLSClientConfig:    &tls.Config{RootCAs: b.roots},
			DisableCompression: true,
		},
	}
}

// goGet fetches url and hashes the body.
func goGet(client *http.Client, c *check, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	c.status, c.proto = resp.StatusCode, resp.Proto
	sum := sha256.New()
	n, err := io.CopyBuffer(sum, resp.Body, make([]byte, 256<<10))
	if err != nil {
		return err
	}
	if n != c.size {
		return fmt.Errorf("status %d, %d bytes, want %d", resp.StatusCode, n, c.size)
	}
	c.got = hex.EncodeToString(sum.Sum(nil))
	return nil
}

// goPut uploads file to url and reads the SHA-256 the server answers.
func goPut(client *http.Client, c *check, url, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	req, err := http.NewRequest(http.MethodPut, url, f)
	if err != nil {
		return err
	}
	req.ContentLength = c.size
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	c.status, c.proto = resp.StatusCode, resp.Proto
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return err
	}
	c.got, err = answeredSum(c.status, body)
	return err
}

// answeredSum is the SHA-256 in an upload's answer ("SHA256  NAME\n").
func answeredSum(status int, body []byte) (string, error) {
	sum, _, _ := strings.Cut(string(body), " ")
	if status != http.StatusCreated || len(sum) != 2*sha256.Size {
		return "", fmt.Errorf("status %d: %q, want 201 and a SHA-256", status, bytes.TrimSpace(body))
	}
	return sum, nil
}

// curlGet fetches url with curl on B and hashes what it writes.
func (b *bed) curlGet(c *check, url string) error {
	sum := sha256.New()
	n, err := b.curlRun(c, sum, url)
	if err != nil {
		return err
	}
	if n != c.size {
		return fmt.Errorf("curl wrote %d bytes, want %d", n, c.size)
	}
	c.got = hex.EncodeToString(sum.Sum(nil))
	return nil
}

// curlPost uploads file to url with curl on B (POST, streamed from the
// file) and reads the SHA-256 the server answers.
func (b *bed) curlPost(c *check, url, file string) error {
	var body bytes.Buffer
	if _, err := b.curlRun(c, &body, url, "-X", "POST", "-T", file); err != nil {
		return err
	}
	var err error
	c.got, err = answeredSum(c.status, body.Bytes())
	return err
}

// curlRun runs curl in B's namespace, writing the response body to out,
// and records the status and protocol it reports. It returns the bytes
// written to out.
func (b *bed) curlRun(c *check, out io.Writer, url string, args ...string) (int64, error) {
	args = append([]string{"-sS", "--max-time", fmt.Sprint(int(transferTimeout.Seconds())),
		"--cacert", filepath.Join(b.work, "cert.pem"), "-o", "-",
		"-w", "%{stderr}%{http_code} HTTP/%{http_version}\n", url}, args...)
	cmd := exec.Command("curl", args...)
	cw := &countWriter{w: out}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = cw, &stderr
	// A process started on a thread inside B's namespace lives there.
	if err := b.pair.B.Do(cmd.Start); err != nil {
		return 0, err
	}
	if err := cmd.Wait(); err != nil {
		return cw.n, fmt.Errorf("curl %s: %v: %s", url, err, bytes.TrimSpace(stderr.Bytes()))
	}
	// -w writes the status line last, to stderr.
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if _, err := fmt.Sscanf(lines[len(lines)-1], "%d %s", &c.status, &c.proto); err != nil {
		return cw.n, fmt.Errorf("curl %s: no status in %q", url, stderr.String())
	}
	return cw.n, nil
}

// countWriter counts what it passes on.
type countWriter struct {
	w io.Writer
	n int64
}

func (cw *countWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	return n, err
}
