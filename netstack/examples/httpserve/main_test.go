//go:build linux

package main

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/packetio/packetio/internal/testenv"
)

// TestSelfTest runs what `go run ./examples/httpserve` runs with no -i,
// with smaller files: a server on netstack over afpacket and over afxdp
// (and on the kernel's own TCP, the reference), fetched from and uploaded
// to over HTTP and HTTPS by Go's client and curl on the kernel's TCP in
// the other namespace. Every check must come
// back with its status and its SHA-256, and nothing may be left behind.
func TestSelfTest(t *testing.T) {
	testenv.NeedBPF(t) // afxdp loads an XDP program
	sizes := []int64{1 << 10, 1 << 20, 8 << 20}
	for _, backend := range []string{"afpacket", "afxdp", "kernel"} {
		t.Run(backend, func(t *testing.T) {
			before := leftovers(t)
			checks, err := selfTest(options{backend: backend, sizes: "1K,1M,8M", quiet: !testing.Verbose()})
			if err != nil {
				t.Fatal(err)
			}
			clients := []string{"go"}
			if _, err := exec.LookPath("curl"); err == nil {
				clients = append(clients, "curl")
			}
			sums := map[int64]string{}
			for _, n := range sizes {
				sums[n] = sha256Hex(t, n)
			}
			seen := map[string]bool{}
			for _, c := range checks {
				if c.backend != backend || !c.ok() || c.want != sums[c.size] {
					t.Errorf("%v", c)
				}
				wantStatus := http.StatusOK
				if c.method != "GET" {
					wantStatus = http.StatusCreated
				}
				if c.status != wantStatus {
					t.Errorf("%v: status %d, want %d", c, c.status, wantStatus)
				}
				seen[fmt.Sprintf("%s %s %s %d", c.client, c.scheme, c.method, c.size)] = true
			}
			for _, client := range clients {
				for _, scheme := range []string{"http", "https"} {
					for _, size := range sizes {
						methods := []string{"GET", "PUT"}
						if client == "curl" {
							methods[1] = "POST"
						}
						for _, m := range methods {
							if k := fmt.Sprintf("%s %s %s %d", client, scheme, m, size); !seen[k] {
								t.Errorf("no check for %s", k)
							}
						}
					}
				}
			}
			if after := leftovers(t); after != before {
				t.Errorf("left behind: before %+v, after %+v", before, after)
			}
		})
	}
}

// A failing self-test (the server refuses the upload as too large) says
// why and still leaves nothing behind.
func TestSelfTestFailureCleansUp(t *testing.T) {
	testenv.NeedRoot(t)
	before := leftovers(t)
	checks, err := selfTest(options{backend: "afpacket", sizes: "2K", maxUpload: 1 << 10, quiet: true})
	if err == nil || !strings.Contains(err.Error(), "status 413") {
		t.Fatalf("err %v, want the upload refused with status 413", err)
	}
	if len(checks) != 1 || checks[0].method != "GET" || !checks[0].ok() {
		t.Errorf("checks %v, want the one GET before the refused upload", checks)
	}
	if after := leftovers(t); after != before {
		t.Errorf("left behind: before %+v, after %+v", before, after)
	}
}

// The self-test detects a file that arrives changed and a server that
// answers the wrong SHA-256.
func TestSelfTestSeesCorruption(t *testing.T) {
	body := []byte("the file as served")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Write(bytes.ToUpper(body)) // same length, other bytes
			return
		}
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "%x  x\n", sha256.Sum256([]byte("something else")))
	}))
	defer srv.Close()
	want := fmt.Sprintf("%x", sha256.Sum256(body))
	c := check{size: int64(len(body)), want: want}
	if err := goGet(srv.Client(), &c, srv.URL+"/f"); err != nil {
		t.Fatal(err)
	}
	if c.ok() || !strings.Contains(c.String(), "MISMATCH") {
		t.Errorf("a changed file passed: %v", c)
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	c = check{size: int64(len(body)), want: want}
	if err := goPut(srv.Client(), &c, srv.URL+"/upload/f", file); err != nil {
		t.Fatal(err)
	}
	if c.ok() {
		t.Errorf("a wrong answered SHA-256 passed: %v", c)
	}
}

// resources counts what the self-test makes and must release: namespace
// and BPF handles of this process, and its work directories.
type resources struct{ netns, bpf, work int }

func leftovers(t *testing.T) resources {
	t.Helper()
	var r resources
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		l, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		switch {
		case strings.HasPrefix(l, "net:["):
			r.netns++
		case strings.HasPrefix(l, "anon_inode:bpf"):
			r.bpf++
		}
	}
	work, err := filepath.Glob(filepath.Join(os.TempDir(), "httpserve-*"))
	if err != nil {
		t.Fatal(err)
	}
	r.work = len(work)
	return r
}

// sha256Hex is the SHA-256 of the self-test's file of n bytes, made again.
func sha256Hex(t *testing.T, n int64) string {
	t.Helper()
	b := &bed{sizes: []int64{n}, sums: map[int64]string{}, work: t.TempDir(), o: options{noCurl: true}}
	if err := b.prepare(); err != nil {
		t.Fatal(err)
	}
	return b.sums[n]
}

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"file.bin", true},
		{"a..b", true},
		{"with space", true},
		{"ünïcode", true},
		{"trailing.", true},
		{strings.Repeat("a", 255), true},
		{"", false},
		{".", false},
		{"..", false},
		{"../x", false},
		{"../../etc/passwd", false},
		{"/etc/passwd", false},
		{"a/b", false},
		{"a/../b", false},
		{`..\x`, false},
		{`C:\x`, false},
		{"a\x00b", false},
		{".hidden", false},
		{".upload-TEMP", false},
		{strings.Repeat("a", 256), false},
	} {
		if err := checkName(tc.name); (err == nil) != tc.ok {
			t.Errorf("checkName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// TestUploads drives the handler over the loopback: what is stored, what
// is refused, and that nothing is written or read outside its two
// directories, whatever the request's path says.
func TestUploads(t *testing.T) {
	top := t.TempDir()
	files, uploads := filepath.Join(top, "files"), filepath.Join(top, "uploads")
	for _, d := range []string{files, uploads} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(top, "outside"), "outside")
	write(filepath.Join(top, "secret"), "SECRET-CONTENT")
	write(filepath.Join(files, "hello.txt"), "hello")
	for _, l := range []struct{ target, link string }{
		{filepath.Join(top, "outside"), filepath.Join(uploads, "link")},
		{"../secret", filepath.Join(files, "escape")},
	} {
		if err := os.Symlink(l.target, l.link); err != nil {
			t.Fatal(err)
		}
	}
	h, err := newHandler(files, uploads, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	big := strings.Repeat("x", 1<<10+1)
	for _, tc := range []struct {
		method, path, body string
		status             int
		stored             string // the name it is stored under in uploads, if any
	}{
		{"PUT", "/upload/a.bin", "payload", http.StatusCreated, "a.bin"},
		{"POST", "/upload/b.bin", "other", http.StatusCreated, "b.bin"},
		{"PUT", "/upload/a.bin", "replaced", http.StatusCreated, "a.bin"},
		{"PUT", "/upload/exact", big[:1<<10], http.StatusCreated, "exact"},
		{"PUT", "/upload/empty", "", http.StatusCreated, "empty"},
		{"PUT", "/upload/too-big", big, http.StatusRequestEntityTooLarge, ""},
		{"PUT", "/upload/..%2Foutside", "x", http.StatusBadRequest, ""},
		{"PUT", "/upload/..%2F..%2Foutside", "x", http.StatusBadRequest, ""},
		{"PUT", "/upload/%2F" + strings.TrimPrefix(filepath.Join(top, "outside"), "/"), "x", http.StatusBadRequest, ""},
		{"PUT", "/upload/sub/file", "x", http.StatusBadRequest, ""},
		{"PUT", "/upload/..%5Coutside", "x", http.StatusBadRequest, ""},
		{"PUT", "/upload/.hidden", "x", http.StatusBadRequest, ""},
		{"PUT", "/upload/..", "x", http.StatusTemporaryRedirect, ""}, // to /, cleaned
		{"PUT", "/upload/", "x", http.StatusBadRequest, ""},
		{"PUT", "/upload/../outside", "x", http.StatusTemporaryRedirect, ""}, // the mux cleans the path
		{"PUT", "/hello.txt", "x", http.StatusMethodNotAllowed, ""},
		{"DELETE", "/upload/a.bin", "", http.StatusMethodNotAllowed, ""},
		// A symbolic link in the upload directory is replaced, not followed.
		{"PUT", "/upload/link", "not outside", http.StatusCreated, "link"},
		{"GET", "/hello.txt", "", http.StatusOK, ""},
		{"GET", "/escape", "", http.StatusInternalServerError, ""},
		{"GET", "/..%2Fsecret", "", http.StatusNotFound, ""},
		{"GET", "/../secret", "", http.StatusTemporaryRedirect, ""}, // to /secret, under files/
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.URL.Opaque = tc.path // sent as is, unescaped and uncleaned
			c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d (%q), want %d", resp.StatusCode, answer, tc.status)
			}
			if tc.stored != "" {
				sum := fmt.Sprintf("%x", sha256.Sum256([]byte(tc.body)))
				if want := sum + "  " + tc.stored + "\n"; string(answer) != want {
					t.Errorf("answer %q, want %q", answer, want)
				}
				got, err := os.ReadFile(filepath.Join(uploads, tc.stored))
				if err != nil || string(got) != tc.body {
					t.Errorf("stored %q, %v; want %q", got, err, tc.body)
				}
			}
			if bytes.Contains(answer, []byte("SECRET-CONTENT")) {
				t.Errorf("answer %q holds the file outside", answer)
			}
			if tc.method == "GET" && tc.status == http.StatusOK && string(answer) != "hello" {
				t.Errorf("answer %q, want hello", answer)
			}
		})
	}
	for path, want := range map[string]string{"outside": "outside", "secret": "SECRET-CONTENT"} {
		if got, err := os.ReadFile(filepath.Join(top, path)); err != nil || string(got) != want {
			t.Errorf("%s outside the upload directory is now %q, %v", path, got, err)
		}
	}
	entries, err := os.ReadDir(top)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Errorf("%d entries beside the two directories, want 2 (outside, secret)", len(entries)-2)
	}
	var names []string
	stored, _ := os.ReadDir(uploads)
	for _, e := range stored {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "a.bin b.bin empty exact link" {
		t.Errorf("upload directory holds %q, want the four uploads and the link, replaced, and no temporary file", got)
	}
	if fi, err := os.Lstat(filepath.Join(uploads, "link")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("link: %v, %v; want a regular file", fi, err)
	}
}

// Uploads are refused where no -upload was given.
func TestNoUploadDirectory(t *testing.T) {
	h, err := newHandler(t.TempDir(), "", 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/upload/x", strings.NewReader("x"))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("status %d, want 405", resp.StatusCode)
	}
}

func TestServerTLS(t *testing.T) {
	addr := netip.MustParseAddr("192.0.2.10")
	cfg, err := serverTLS(options{}, addr)
	if err != nil {
		t.Fatal(err)
	}
	leaf := cfg.Certificates[0].Leaf
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: addr.String()}); err != nil {
		t.Errorf("the self-signed certificate does not verify for %s: %v", addr, err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "192.0.2.11"}); err == nil {
		t.Error("the self-signed certificate verifies for another address")
	}
	// -cert and -key load what they name, and go together.
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	key, err := x509.MarshalPKCS8PrivateKey(cfg.Certificates[0].PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600)
	cfg2, err := serverTLS(options{cert: certFile, key: keyFile}, addr)
	if err != nil || !bytes.Equal(cfg2.Certificates[0].Certificate[0], leaf.Raw) {
		t.Errorf("-cert/-key: %v", err)
	}
	for _, o := range []options{{cert: certFile}, {key: keyFile}, {cert: certFile, key: certFile}} {
		if _, err := serverTLS(o, addr); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"1", 1}, {"4096", 4096}, {"1K", 1 << 10}, {"64M", 64 << 20}, {"2G", 2 << 30}, {"1024G", 1 << 40},
		{"", 0}, {"0", 0}, {"-1", 0}, {"K", 0}, {"1T", 0}, {"1k", 0}, {"1.5M", 0}, {"1025G", 0}, {"99999999999999999999", 0},
	} {
		got, err := parseSize(tc.in)
		if got != tc.want || (err == nil) != (tc.want != 0) {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestSelfTestRefuses(t *testing.T) {
	for _, o := range []options{
		{backend: "tap", sizes: "1K"},
		{backend: "afpacket,afpacket", sizes: "1K"},
		{backend: "afpacket,", sizes: "1K"},
		{backend: "afpacket", sizes: "1K,zero"},
		{backend: "afpacket", sizes: ""},
	} {
		if _, err := selfTest(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestAnsweredSum(t *testing.T) {
	sum := hex.EncodeToString(make([]byte, sha256.Size))
	for _, tc := range []struct {
		status int
		body   string
		ok     bool
	}{
		{201, sum + "  name\n", true},
		{200, sum + "  name\n", false},
		{201, "deadbeef  name\n", false},
		{201, "", false},
		{413, "upload larger than 1024 bytes\n", false},
	} {
		got, err := answeredSum(tc.status, []byte(tc.body))
		if (err == nil) != tc.ok || tc.ok && got != sum {
			t.Errorf("%d %q: %q, %v", tc.status, tc.body, got, err)
		}
	}
}
