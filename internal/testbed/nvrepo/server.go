package nvrepo

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// Server is a test's handle on the process's HTTPS server: what it mounts
// and the faults it sets are removed when the test ends, and Requests
// lists what was asked since the handle was made. Tests that share the
// server must not run in parallel: the newest Mount of a prefix wins.
type Server struct {
	l     *listener
	first int // index of the first request this handle reports
}

// listener is the one HTTPS server of the process, on 127.0.0.1:443.
type listener struct {
	lock *os.File // the port lock, held (and kept from the garbage collector's finalizer) until the process exits
	ca   *testbed.Authority

	mu       sync.Mutex
	certs    map[string]*tls.Certificate
	mounts   []*mount
	faults   []*fault
	requests []string
}

type mount struct {
	owner        *Server
	host, prefix string // "developer.download.nvidia.com", "/compute/cuda/repos/debian12/x86_64/"
	dir          string
}

type fault struct {
	owner     *Server
	glob      *regexp.Regexp
	status    int // 0: hang until the request's context ends
	remaining int
}

var shared struct {
	once sync.Once
	l    *listener
	err  error
}

// defaultHosts are NVIDIA's package hosts that Trust always maps to the
// server: the CUDA repositories and the container toolkit's apt/yum
// repositories (see cuda_debian.go, toolkit_debian.go).
var defaultHosts = []string{"developer.download.nvidia.com", "nvidia.github.io"}

// Start listens on 127.0.0.1:443 (port 443: the URLs gpu-bootstrap writes carry no port). One per process;
// a cross-process file lock serializes test binaries that need it (a second waits, it never fails).
func Start(t testing.TB) *Server {
	t.Helper()
	if os.Geteuid() != 0 {
		msg := "nvrepo: serving on port 443 needs root (run the tests as root, e.g. sudo -E go test)"
		if testbed.Required() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	shared.once.Do(func() { shared.l, shared.err = listen() })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	l := shared.l
	l.mu.Lock()
	s := &Server{l: l, first: len(l.requests)}
	l.mu.Unlock()
	t.Cleanup(func() { l.forget(s) })
	return s
}

func listen() (*listener, error) {
	lock, err := lockPort()
	if err != nil {
		return nil, err
	}
	ca, err := testbed.NewAuthority("gpu-testbed nvrepo CA")
	if err != nil {
		return nil, fmt.Errorf("nvrepo: %w", err)
	}
	l := &listener{lock: lock, ca: ca, certs: map[string]*tls.Certificate{}}
	tcp, err := listenPort()
	if err != nil {
		return nil, err
	}
	srv := &http.Server{
		Handler:           l,
		ReadHeaderTimeout: time.Minute,
	}
	go func() {
		_ = srv.Serve(tls.NewListener(tcp, &tls.Config{GetCertificate: l.certificate, MinVersion: tls.VersionTLS12}))
	}()
	return l, nil
}

// listenPort binds 127.0.0.1:443. The lock's previous holder may still be
// closing its socket: a process's files close one by one as it exits, the
// lock's before the socket's as often as not, so EADDRINUSE right after
// taking the lock is retried for a while (backoff, bounded) before it is
// reported as another program holding the port.
func listenPort() (net.Listener, error) {
	wait := 10 * time.Millisecond
	deadline := time.Now().Add(30 * time.Second)
	for {
		tcp, err := net.Listen("tcp", "127.0.0.1:443")
		if err == nil {
			return tcp, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			return nil, fmt.Errorf("nvrepo: listening on 127.0.0.1:443 (a program other than a gpu-testbed test holds the port? see ss -ltnp): %w", err)
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}

// certificate issues (once per name) a serving certificate for the name
// the client asked for, so any mounted host name verifies.
func (l *listener) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := hello.ServerName
	if name == "" {
		name = "127.0.0.1"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.certs[name]; ok {
		return c, nil
	}
	var dns []string
	if net.ParseIP(name) == nil {
		dns = []string{name}
	}
	pair, err := l.ca.ServingPair(name, dns, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	c, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		return nil, err
	}
	l.certs[name] = &c
	return &c, nil
}

// URL is the server's own address.
func (s *Server) URL() string { return "https://127.0.0.1:443" }

// CACertPEM is the test CA's certificate, for clients outside a root.
func (s *Server) CACertPEM() []byte { return s.l.ca.CertPEM() }

// Mount serves dir's files under https://<host>/<prefix> for host:prefix like
// "developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/" (host-based routing on the Host header / SNI).
func (s *Server) Mount(hostPrefix, dir string) {
	host, prefix, _ := strings.Cut(hostPrefix, "/")
	prefix = "/" + prefix
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	s.l.mounts = append(s.l.mounts, &mount{owner: s, host: host, prefix: prefix, dir: dir})
}

// Fail makes the next n GETs whose "host/path" (or path) matches glob get
// status (e.g. 404, 500), or hang until the request's context ends
// (status 0). In glob, * matches any run of characters, / included, and ?
// one character: "*/InRelease" matches every repository's InRelease.
func (s *Server) Fail(glob string, status, n int) {
	var re strings.Builder
	re.WriteString("^")
	for _, r := range glob {
		switch r {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	s.l.faults = append(s.l.faults, &fault{owner: s, glob: regexp.MustCompile(re.String()), status: status, remaining: n})
}

// Requests lists "host/path" of every request since Start made this handle.
func (s *Server) Requests() []string {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	return append([]string(nil), s.l.requests[s.first:]...)
}

// mountedHosts lists the host names of all current mounts.
func (l *listener) mountedHosts() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var hosts []string
	for _, m := range l.mounts {
		hosts = append(hosts, m.host)
	}
	return hosts
}

// forget drops a finished test's mounts and faults.
func (l *listener) forget(s *Server) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var mounts []*mount
	for _, m := range l.mounts {
		if m.owner != s {
			mounts = append(mounts, m)
		}
	}
	var faults []*fault
	for _, f := range l.faults {
		if f.owner != s {
			faults = append(faults, f)
		}
	}
	l.mounts, l.faults = mounts, faults
}

func (l *listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	key := host + r.URL.Path
	l.mu.Lock()
	l.requests = append(l.requests, key)
	f := l.takeFault(key, r.URL.Path)
	m := l.route(host, r.URL.Path)
	l.mu.Unlock()

	if f != nil {
		if f.status == 0 {
			<-r.Context().Done()
			return
		}
		http.Error(w, http.StatusText(f.status), f.status)
		return
	}
	if m == nil || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.NotFound(w, r)
		return
	}
	serveFile(w, r, filepath.Join(m.dir, filepath.FromSlash(path.Clean("/"+strings.TrimPrefix(r.URL.Path, m.prefix)))))
}

// takeFault returns the first fault matching the request and counts it.
func (l *listener) takeFault(key, urlPath string) *fault {
	for _, f := range l.faults {
		if f.remaining > 0 && (f.glob.MatchString(key) || f.glob.MatchString(urlPath)) {
			f.remaining--
			return f
		}
	}
	return nil
}

// route finds the newest mount of the host whose prefix is the longest
// prefix of the path.
func (l *listener) route(host, urlPath string) *mount {
	var best *mount
	for i := len(l.mounts) - 1; i >= 0; i-- {
		m := l.mounts[i]
		if m.host == host && strings.HasPrefix(urlPath, m.prefix) && (best == nil || len(m.prefix) > len(best.prefix)) {
			best = m
		}
	}
	return best
}

// serveFile serves a regular file with net/http's conditional-request and
// range handling (apt sends If-Modified-Since for index files); anything
// else is 404, as a static web server without listings answers.
func serveFile(w http.ResponseWriter, r *http.Request, name string) {
	f, err := os.Open(name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	http.ServeContent(w, r, info.Name(), info.ModTime(), f)
}
