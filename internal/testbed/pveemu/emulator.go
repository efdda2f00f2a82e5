package pveemu

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// The test credentials. RootPassword and the token secrets are test
// credentials: `gpu-testbed env` prints them, the emulator never logs them.
const (
	// RootUser is the superuser: the only identity PVE lets set raw
	// hostpci devices.
	RootUser     = "root@pam"
	RootPassword = "gpu-testbed-root-password"
	// TokenID is the testbed's API token (`gpu-testbed env` exports it):
	// a token of terraform@pve without privilege separation, so with the
	// user's privileges, which serve this provider, bpg's and Telmate's
	// (access.go userACL). Not root.
	TokenID     = "terraform@pve!gpu"
	TokenSecret = "5b0f1a3e-8c2d-4e7f-9a61-2d4c8e0b7f13"
	// RoleTokenID is a privilege-separated token of terraform@pve with
	// exactly the documented role (internal/proxmox's Role for PVE 9,
	// local-lvm and vmbr0, with Mapping.Modify): what proves the docs'
	// privileges suffice.
	RoleTokenID     = "terraform@pve!role"
	RoleTokenSecret = "7c4a9e20-1d3b-4f86-b5e2-0a9d6c3f8e14"
	// RootTokenID is a token of root@pam without privilege separation: it
	// has root's privileges, but its authid is not "root@pam", so PVE
	// still refuses it raw hostpci devices.
	RootTokenID     = "root@pam!gpu"
	RootTokenSecret = "0e9d6c4b-3a21-4f58-b7e6-91c0d2a4f8e5"
	// NoMappingTokenID is privilege-separated like TokenID but has no
	// privileges on /mapping: PVE refuses it mapped GPUs (Mapping.Use).
	NoMappingTokenID     = "terraform@pve!no-mapping"
	NoMappingTokenSecret = "c3f1a7d2-6b84-4e09-a5d3-7e2b9c0f4a61"
)

// Version is the Proxmox VE release the emulator answers as: pve-manager
// 9.1.9, whose build's repoid is the 16-digit git revision of its
// "bump version to 9.1.9" commit (pve-manager's Makefile GITVERSION); the
// era of pve-docs 9.1.3's apidata (shared/reference/pve-api-9.1.json)
// and qemu-server 9.1.9.
const (
	Version = "9.1.9"
	Release = "9.1"
	RepoID  = "ee7bad0a3d1546c9"
	// QEMUVersion is what status/current reports as running-qemu: PVE
	// 9.1 ships QEMU 10.1.
	QEMUVersion = "10.1.2"
)

// Options configure an Emulator.
type Options struct {
	// TaskDuration is how long each task (create, clone, config, start,
	// stop, shutdown, destroy) runs before it finishes; default 200ms.
	TaskDuration time.Duration
	// Command runs the emulator as a process of its own (a detached
	// testbed): Start appends its flags, and the program must call Serve
	// with them (gpu-testbed passes itself and `serve-proxmox`). Without
	// it, the emulator runs in-process.
	Command []string
}

// Emulator is the Proxmox VE backend of the testbed: PVE's REST API on a
// loopback HTTPS port (see the package comment).
type Emulator struct {
	opts   Options
	port   int
	caFile string

	mu sync.Mutex
	st *state

	ctx context.Context
	log *log.Logger
}

var _ testbed.Backend = (*Emulator)(nil)

// New returns an Emulator to start as one of testbed.Options.Backends.
func New(opts Options) *Emulator {
	if opts.TaskDuration == 0 {
		opts.TaskDuration = 200 * time.Millisecond
	}
	return &Emulator{opts: opts, st: newState(), ctx: context.Background(), log: log.New(io.Discard, "", 0)}
}

// Name is the backend's name.
func (e *Emulator) Name() string { return "proxmox" }

// URL is the API's base URL, https://127.0.0.1:PORT/api2/json.
func (e *Emulator) URL() string {
	return "https://127.0.0.1:" + strconv.Itoa(e.port) + "/api2/json"
}

// CAFile is the testbed CA's certificate (PEM), which signed the
// emulator's serving certificate.
func (e *Emulator) CAFile() string { return e.caFile }

// Env points Proxmox clients (Telmate's provider, this provider, the
// proxmoxer library) at the emulator with the test credentials.
func (e *Emulator) Env() map[string]string {
	return map[string]string{
		"PM_API_URL":          e.URL(),
		"PM_API_TOKEN_ID":     TokenID,
		"PM_API_TOKEN_SECRET": TokenSecret,
		"PM_USER":             RootUser,
		"PM_PASS":             RootPassword,
		"PM_CA_CERT_FILE":     e.caFile,
	}
}

func (e *Emulator) certFile() string { return filepath.Join(e.dirOf(), "pveproxy-ssl.pem") }
func (e *Emulator) keyFile() string  { return filepath.Join(e.dirOf(), "pveproxy-ssl.key") }

// dir is the backend's directory, where the serving pair is written for a
// process of its own.
func (e *Emulator) dirOf() string { return e.st.dir }

// Start listens on a loopback port and returns when it answers.
func (e *Emulator) Start(ctx context.Context, host *testbed.Host) error {
	e.st.dir = host.Dir()
	e.caFile = host.CAFile()
	ports, err := host.FreePorts("api")
	if err != nil {
		return err
	}
	e.port = ports[0]
	pair, err := host.CA().ServingPair("pve-emulator", []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return fmt.Errorf("issuing the Proxmox emulator's certificate: %w", err)
	}
	if cmd := e.opts.Command; len(cmd) > 0 {
		if err := os.WriteFile(e.certFile(), pair.CertPEM, 0o600); err != nil {
			return fmt.Errorf("writing the Proxmox emulator's certificate: %w", err)
		}
		if err := os.WriteFile(e.keyFile(), pair.KeyPEM, 0o600); err != nil {
			return fmt.Errorf("writing the Proxmox emulator's key: %w", err)
		}
		args := append(cmd[1:len(cmd):len(cmd)], e.serveFlags()...)
		if err := host.StartProcess("proxmox-emulator", cmd[0], args...); err != nil {
			return err
		}
	} else {
		if host.Detached() {
			return errors.New("starting the Proxmox emulator: a detached testbed needs Options.Command")
		}
		l, err := e.listen(pair)
		if err != nil {
			return err
		}
		if err := host.Go("proxmox-emulator", func(ctx context.Context, logw io.Writer) error {
			return e.serve(ctx, logw, l)
		}); err != nil {
			_ = l.Close()
			return err
		}
	}
	return e.waitServing(ctx, host.CA().CertPEM())
}

// listen opens the API port with TLS, HTTP/1.1 only (as pveproxy).
func (e *Emulator) listen(pair testbed.KeyPair) (net.Listener, error) {
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading the Proxmox emulator's certificate: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(e.port))
	if err != nil {
		return nil, fmt.Errorf("listening for the Proxmox API: %w", err)
	}
	return tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}), nil
}

// serve answers on l until ctx ends.
func (e *Emulator) serve(ctx context.Context, logw io.Writer, l net.Listener) error {
	e.mu.Lock()
	e.ctx = ctx
	e.log = log.New(logw, "", log.LstdFlags|log.Lmicroseconds)
	e.mu.Unlock()
	srv := &http.Server{Handler: e.handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: e.log}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
	case err := <-errs:
		e.log.Printf("the listener stopped: %v", err)
	}
	_ = srv.Close()
	return nil
}

// waitServing polls the port until it completes a TLS handshake with a
// certificate the testbed CA signed (a bare connection would only log a
// failed handshake).
func (e *Emulator) waitServing(ctx context.Context, caPEM []byte) error {
	addr := "127.0.0.1:" + strconv.Itoa(e.port)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("waiting for the Proxmox emulator: the testbed CA certificate does not parse")
	}
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: time.Second}, Config: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	delay := 10 * time.Millisecond
	for {
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = conn.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the Proxmox emulator's port: %w", context.Cause(ctx))
		case <-time.After(delay):
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}
