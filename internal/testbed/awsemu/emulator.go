package awsemu

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// The test credentials and identity. SecretAccessKey is a test credential:
// `gpu-testbed env` prints it, the emulator never logs it.
const (
	AccessKeyID        = "AKIAGPUTESTBED000001"
	SecretAccessKey    = "gpuTestbedSecretKey0000000000000000000001"
	AccountID          = "111122223333"
	CallerARN          = "arn:aws:iam::111122223333:user/gpu-testbed"
	CallerUserID       = "AIDAGPUTESTBED0000001"
	DefaultRegion      = "us-west-2"
	DefaultClusterName = "gpu-testbed"
)

// ClusterVersion is the Kubernetes version DescribeCluster reports: the
// minor version of the release the testbed's kube-apiserver runs, the one
// GPU_TESTBED_KUBERNETES chooses (testbed.ChosenKubernetesVersion; a bad
// choice is reported by the cluster's start, and reads as the newest here).
func ClusterVersion() string {
	version, err := testbed.ChosenKubernetesVersion()
	if err != nil {
		version = testbed.KubernetesVersion
	}
	major, rest, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	minor, _, _ := strings.Cut(rest, ".")
	return major + "." + minor
}

// Options configure an Emulator.
type Options struct {
	Region string // default DefaultRegion
	// ClusterName names the one EKS cluster that exists from the start;
	// default DefaultClusterName.
	ClusterName string
	// Cluster is the testbed's Kubernetes backend: its kube-apiserver is
	// the EKS cluster's endpoint, node groups register kwok nodes into it.
	// The emulator starts before it (it serves the token webhook the API
	// server is started with) and uses it only once it is needed.
	Cluster *k8s.Cluster
	// ActiveDelay is how long CREATING, UPDATING and DELETING last;
	// default 2s.
	ActiveDelay time.Duration
	// NodeJoinDelay is how long after ACTIVE a node group's nodes
	// register; default 1s.
	NodeJoinDelay time.Duration
	// CapacityReservations are put in the account at Start (see
	// AddCapacityReservation); none by default.
	CapacityReservations []CapacityReservationSeed
	// BlockReclaimLead is how long before a Capacity Block's end EC2
	// terminates the instances in it; default 30 minutes, as EC2 does
	// (capacity_placement.go); negative: at the end.
	BlockReclaimLead time.Duration
	// RepairMinute is how long one minute of node auto repair's waits
	// lasts (EKS's are 10 and 30 minutes, an override's
	// minRepairWaitTimeMins): default a minute; tests shorten it.
	// SetRepairMinute changes it on a running emulator.
	RepairMinute time.Duration
	// Command runs the emulator as a process of its own (a detached
	// testbed): Start appends its flags, and the program must call Serve
	// with them (gpu-testbed passes itself and `serve-aws`). Without it,
	// the emulator runs in-process.
	Command []string
}

// The services, by the name the SDK signs them with; each has a port.
const (
	serviceEKS         = "eks"
	serviceEC2         = "ec2"
	serviceAutoScaling = "autoscaling"
	serviceSTS         = "sts"
	portWebhook        = "webhook"
)

var servicePorts = []string{serviceEKS, serviceEC2, serviceAutoScaling, serviceSTS, portWebhook}

// Emulator is the AWS backend of the testbed: EKS, EC2, Auto Scaling and
// STS endpoints on loopback and the EKS token webhook.
type Emulator struct {
	opts  Options
	ports map[string]int
	dir   string

	// kube reaches the testbed cluster once it is up.
	kube kubeAccess

	mu sync.Mutex
	st *state
	// kubeMu orders node registrations and removals, so that a node
	// removed while it registers does not stay.
	kubeMu sync.Mutex

	// ctx ends when the testbed stops; transitions scheduled with after
	// stop with it.
	ctx context.Context
	log *log.Logger
}

var _ testbed.Backend = (*Emulator)(nil)

// New returns an Emulator to start as one of testbed.Options.Backends,
// before opts.Cluster.
func New(opts Options) *Emulator {
	if opts.Region == "" {
		opts.Region = DefaultRegion
	}
	if opts.ClusterName == "" {
		opts.ClusterName = DefaultClusterName
	}
	if opts.ActiveDelay == 0 {
		opts.ActiveDelay = 2 * time.Second
	}
	if opts.NodeJoinDelay == 0 {
		opts.NodeJoinDelay = time.Second
	}
	if opts.RepairMinute <= 0 {
		opts.RepairMinute = time.Minute
	}
	switch {
	case opts.BlockReclaimLead == 0:
		opts.BlockReclaimLead = blockReclaimLead
	case opts.BlockReclaimLead < 0:
		opts.BlockReclaimLead = 0
	}
	e := &Emulator{opts: opts, ctx: context.Background(), log: log.New(io.Discard, "", 0)}
	e.st = newState(opts)
	if opts.Cluster != nil {
		e.kube = clusterAccess{opts.Cluster}
	}
	return e
}

// Name is the backend's name.
func (e *Emulator) Name() string { return "aws" }

// ClusterName is the EKS cluster that exists from the start.
func (e *Emulator) ClusterName() string { return e.opts.ClusterName }

// Region is the emulated region.
func (e *Emulator) Region() string { return e.opts.Region }

// webhookFiles are the webhook's serving certificate and key and the
// kubeconfig kube-apiserver reaches it with.
func (e *Emulator) webhookCertFile() string { return filepath.Join(e.dir, "webhook.crt") }
func (e *Emulator) webhookKeyFile() string  { return filepath.Join(e.dir, "webhook.key") }

// TokenWebhookKubeconfig is the path of the kubeconfig that points
// kube-apiserver at the token webhook (k8s.Options.TokenWebhook).
func (e *Emulator) TokenWebhookKubeconfig() string {
	return filepath.Join(e.dir, "token-webhook.kubeconfig")
}

// Start listens on a loopback port per service and one for the webhook,
// and returns when all of them answer.
func (e *Emulator) Start(ctx context.Context, host *testbed.Host) error {
	e.dir = host.Dir()
	ports, err := host.FreePorts(servicePorts...)
	if err != nil {
		return err
	}
	e.ports = map[string]int{}
	for i, name := range servicePorts {
		e.ports[name] = ports[i]
	}
	pair, err := host.CA().ServingPair("aws-emulator-webhook", []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return fmt.Errorf("issuing the token webhook's certificate: %w", err)
	}
	if err := os.WriteFile(e.webhookCertFile(), pair.CertPEM, 0o600); err != nil {
		return fmt.Errorf("writing the token webhook's certificate: %w", err)
	}
	if err := os.WriteFile(e.webhookKeyFile(), pair.KeyPEM, 0o600); err != nil {
		return fmt.Errorf("writing the token webhook's key: %w", err)
	}
	if err := writeWebhookKubeconfig(e.TokenWebhookKubeconfig(), e.webhookURL(), host.CAFile()); err != nil {
		return err
	}
	caPEM := host.CA().CertPEM()

	if cmd := e.opts.Command; len(cmd) > 0 {
		args := append(cmd[1:len(cmd):len(cmd)], e.serveFlags(host)...)
		if err := host.StartProcess("aws-emulator", cmd[0], args...); err != nil {
			return err
		}
	} else {
		if host.Detached() {
			return errors.New("starting the AWS emulator: a detached testbed needs Options.Command")
		}
		e.st.caPEM = caPEM
		listeners, err := e.listen(pair)
		if err != nil {
			return err
		}
		if err := host.Go("aws-emulator", func(ctx context.Context, logw io.Writer) error {
			return e.serve(ctx, logw, listeners)
		}); err != nil {
			for _, l := range listeners {
				_ = l.Close()
			}
			return err
		}
	}
	return e.waitServing(ctx)
}

// listen opens every port; the webhook's with TLS.
func (e *Emulator) listen(pair testbed.KeyPair) (map[string]net.Listener, error) {
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading the token webhook's certificate: %w", err)
	}
	listeners := map[string]net.Listener{}
	for _, name := range servicePorts {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(e.ports[name]))
		if err != nil {
			for _, open := range listeners {
				_ = open.Close()
			}
			return nil, fmt.Errorf("listening for %s: %w", name, err)
		}
		if name == portWebhook {
			l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		}
		listeners[name] = l
	}
	return listeners, nil
}

// serve answers on every listener until ctx ends.
func (e *Emulator) serve(ctx context.Context, logw io.Writer, listeners map[string]net.Listener) error {
	e.ctx = ctx
	e.log = log.New(logw, "", log.LstdFlags|log.Lmicroseconds)
	if err := e.seedCapacity(); err != nil {
		for _, l := range listeners {
			_ = l.Close()
		}
		return err
	}
	handlers := map[string]http.Handler{
		serviceEKS:         e.signed(serviceEKS, http.HandlerFunc(e.serveEKS), e.controlHandler()),
		serviceEC2:         e.signed(serviceEC2, http.HandlerFunc(e.serveEC2), nil),
		serviceAutoScaling: e.signed(serviceAutoScaling, http.HandlerFunc(e.serveAutoScaling), nil),
		serviceSTS:         e.signed(serviceSTS, http.HandlerFunc(e.serveSTS), nil),
		portWebhook:        http.HandlerFunc(e.serveTokenReview),
	}
	errs := make(chan error, len(listeners))
	var servers []*http.Server
	for name, l := range listeners {
		srv := &http.Server{Handler: handlers[name], ReadHeaderTimeout: 10 * time.Second, ErrorLog: e.log}
		servers = append(servers, srv)
		go func() { errs <- srv.Serve(l) }()
	}
	select {
	case <-ctx.Done():
	case err := <-errs:
		e.log.Printf("a listener stopped: %v", err)
	}
	for _, srv := range servers {
		_ = srv.Close()
	}
	return nil
}

// waitServing polls each service port until it accepts connections. The
// webhook's port opens with them (listen opens all before any serves); a
// bare connection to it would only log a failed TLS handshake.
func (e *Emulator) waitServing(ctx context.Context) error {
	for _, name := range servicePorts {
		if name == portWebhook {
			continue
		}
		addr := "127.0.0.1:" + strconv.Itoa(e.ports[name])
		delay := 10 * time.Millisecond
		for {
			conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
			if err == nil {
				_ = conn.Close()
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for the AWS emulator's %s port: %w", name, context.Cause(ctx))
			case <-time.After(delay):
			}
			delay = min(2*delay, 500*time.Millisecond)
		}
	}
	return nil
}

func (e *Emulator) endpoint(service string) string {
	return "http://127.0.0.1:" + strconv.Itoa(e.ports[service])
}

func (e *Emulator) webhookURL() string {
	return "https://127.0.0.1:" + strconv.Itoa(e.ports[portWebhook]) + "/authenticate"
}

// EKSEndpoint, EC2Endpoint, AutoScalingEndpoint and STSEndpoint are the
// services' base URLs (http://127.0.0.1:PORT), for an SDK's BaseEndpoint.
func (e *Emulator) EKSEndpoint() string         { return e.endpoint(serviceEKS) }
func (e *Emulator) EC2Endpoint() string         { return e.endpoint(serviceEC2) }
func (e *Emulator) AutoScalingEndpoint() string { return e.endpoint(serviceAutoScaling) }
func (e *Emulator) STSEndpoint() string         { return e.endpoint(serviceSTS) }

// Env points the AWS CLI and SDKs at the emulator with the test
// credentials, and keeps a user's own AWS configuration out.
func (e *Emulator) Env() map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_EKS":          e.EKSEndpoint(),
		"AWS_ENDPOINT_URL_EC2":          e.EC2Endpoint(),
		"AWS_ENDPOINT_URL_AUTO_SCALING": e.AutoScalingEndpoint(),
		"AWS_ENDPOINT_URL_STS":          e.STSEndpoint(),
		"AWS_ACCESS_KEY_ID":             AccessKeyID,
		"AWS_SECRET_ACCESS_KEY":         SecretAccessKey,
		"AWS_REGION":                    e.opts.Region,
		"AWS_DEFAULT_REGION":            e.opts.Region,
		"GPU_TESTBED_EKS_CLUSTER":       e.opts.ClusterName,
		"AWS_EC2_METADATA_DISABLED":     "true",
		"AWS_CONFIG_FILE":               os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE":   os.DevNull,
	}
}

// writeWebhookKubeconfig writes the kubeconfig kube-apiserver reads to
// call the webhook: its URL and the CA that signed its certificate.
func writeWebhookKubeconfig(path, url, caFile string) error {
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: aws-iam-authenticator
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: kube-apiserver
contexts:
- name: webhook
  context:
    cluster: aws-iam-authenticator
    user: kube-apiserver
current-context: webhook
`, url, caFile)
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return fmt.Errorf("writing the token webhook kubeconfig: %w", err)
	}
	return nil
}

// NewWithCluster returns an emulator and the testbed cluster it serves,
// wired both ways: the cluster's API server uses the emulator's token
// webhook, node groups register into the cluster. Start them in this
// order: testbed.Options{Backends: []testbed.Backend{emu, cluster}}.
func NewWithCluster(opts Options, clusterOpts k8s.Options) (*Emulator, *k8s.Cluster) {
	e := New(opts)
	clusterOpts.TokenWebhook = e
	c := k8s.New(clusterOpts)
	e.opts.Cluster = c
	e.kube = clusterAccess{c}
	return e, c
}
