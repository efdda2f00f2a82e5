package k8s

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// Options configure a Cluster.
type Options struct {
	// Nodes are registered once the control plane is up; Start returns
	// when they are Ready.
	Nodes []NodeSpec
	// SimulatorCommand runs the device-plugin simulator as a process of its
	// own: Start appends `--kubeconfig <path>` and the program must call
	// RunSimulators (gpu-testbed passes itself and `simulate`).
	// Without it the simulator runs in-process, or not at all in a detached
	// testbed.
	SimulatorCommand []string
	// TokenWebhook, when set, is a webhook token authenticator the API
	// server consults for bearer tokens it does not know itself (the AWS
	// emulator's, which accepts EKS tokens): its kubeconfig is passed as
	// --authentication-token-webhook-config-file. It must be serving
	// before the cluster starts.
	TokenWebhook interface{ TokenWebhookKubeconfig() string }
	// KubernetesVersion is the release the control plane runs: one of
	// testbed.KubernetesVersion and testbed.OldestKubernetesVersion, the
	// two the testbed builds. Empty means the one $GPU_TESTBED_KUBERNETES
	// chooses (testbed.ChosenKubernetesVersion), or, with WithoutDRA, the
	// oldest.
	KubernetesVersion string
	// WithoutDRA runs a cluster that does not serve Dynamic Resource
	// Allocation, as a 1.33 cluster with its defaults or a 1.34 one whose
	// administrator turned it off: kube-apiserver serves no
	// resource.k8s.io/v1 (--runtime-config; 1.34 serves no other
	// resource.k8s.io version by default) and the DynamicResourceAllocation
	// feature gate, GA and on by default since 1.34, is off in the API
	// server, controller manager and scheduler. Kubernetes 1.35 locks the
	// gate on, so it needs the oldest release: Start refuses it with the
	// newest.
	WithoutDRA bool
}

// Cluster is the Kubernetes backend: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok on loopback ports, and
// the device-plugin simulator. Its methods other than Name and Start are
// for a started cluster.
type Cluster struct {
	opts       Options
	version    string // the Kubernetes release it runs
	layout     *layout
	restConfig *rest.Config
	client     kubernetes.Interface
	// attachedURL is the API server of a cluster reached with Attach.
	attachedURL string
}

var _ testbed.Backend = (*Cluster)(nil)

// New returns a Cluster to start as one of testbed.Options.Backends.
func New(opts Options) *Cluster { return &Cluster{opts: opts} }

// Name is the backend's name: its directory, and the prefix of its ports
// in the testbed state.
func (c *Cluster) Name() string { return "kubernetes" }

// simulatorIdentity is the client identity, kubeconfig and log name of the
// device-plugin simulator.
const simulatorIdentity = "device-plugin-simulator"

// Start runs etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok and the device-plugin simulator, registers
// Options.Nodes, and returns when the API server is ready, the controller
// manager has created the default service account, and every node is
// Ready and schedulable.
func (c *Cluster) Start(ctx context.Context, host *testbed.Host) error {
	version, err := c.opts.kubernetesVersion()
	if err != nil {
		return err
	}
	c.version = version
	bins, err := testbed.KubernetesBinaries(version)
	if err != nil {
		return err
	}
	l := &layout{dir: host.Dir(), withoutDRA: c.opts.WithoutDRA}
	c.layout = l
	if l.ports, err = allocatePorts(host); err != nil {
		return err
	}
	if l.creds, err = writeCredentials(filepath.Join(l.dir, "pki"), host.CA(), host.CAFile()); err != nil {
		return err
	}
	for component := range clientIdentities {
		if err := writeKubeconfig(l.kubeconfig(component), l.apiServerURL(), l.creds.caPEM, l.creds.clients[component]); err != nil {
			return err
		}
	}
	if err := writeKwokConfig(l.kwokConfigPath()); err != nil {
		return err
	}
	c.restConfig = restConfigFor(l.apiServerURL(), l.creds.caPEM, l.creds.clients["admin"])
	if c.client, err = kubernetes.NewForConfig(withProtobuf(c.restConfig)); err != nil {
		return fmt.Errorf("creating the Kubernetes client: %w", err)
	}

	if err := host.StartProcess("etcd", bins.Etcd, l.etcdArgs()...); err != nil {
		return err
	}
	if err := waitForEtcd(ctx, l.etcdClientURL(), l.creds.caPEM, l.creds.etcdClient); err != nil {
		return err
	}
	var tokenWebhookConfig string
	if c.opts.TokenWebhook != nil {
		tokenWebhookConfig = c.opts.TokenWebhook.TokenWebhookKubeconfig()
	}
	if err := host.StartProcess("kube-apiserver", bins.KubeAPIServer, l.apiServerArgs(tokenWebhookConfig)...); err != nil {
		return err
	}
	if err := waitForAPIServer(ctx, c.client); err != nil {
		return err
	}
	for _, component := range []struct {
		name, path string
		args       []string
	}{
		{"kube-controller-manager", bins.KubeControllerManager, l.controllerManagerArgs()},
		{"kube-scheduler", bins.KubeScheduler, l.schedulerArgs()},
		{"kwok", bins.Kwok, l.kwokArgs()},
	} {
		if err := host.StartProcess(component.name, component.path, component.args...); err != nil {
			return err
		}
	}
	if err := c.startSimulator(host); err != nil {
		return err
	}

	if err := c.AddNodes(ctx, c.opts.Nodes); err != nil {
		return err
	}
	if err := waitForDefaultServiceAccount(ctx, c.client); err != nil {
		return err
	}
	names := make([]string, len(c.opts.Nodes))
	for i, spec := range c.opts.Nodes {
		names[i] = spec.Name
	}
	return c.WaitForNodesReady(ctx, names...)
}

// kubernetesVersion is the release the options ask for (see
// Options.KubernetesVersion), or an error naming why it cannot run them.
func (o Options) kubernetesVersion() (string, error) {
	version := o.KubernetesVersion
	if version == "" && o.WithoutDRA {
		version = testbed.OldestKubernetesVersion
	}
	if version == "" {
		return testbed.ChosenKubernetesVersion()
	}
	if testbed.KubernetesChoice(version) == "" {
		return "", fmt.Errorf("choosing the Kubernetes release: the testbed builds %s and %s, not %s",
			testbed.KubernetesVersion, testbed.OldestKubernetesVersion, version)
	}
	if o.WithoutDRA && version != testbed.OldestKubernetesVersion {
		return "", fmt.Errorf("starting Kubernetes %s without DRA: its DynamicResourceAllocation gate is locked on (since 1.35); only %s can turn it off",
			version, testbed.OldestKubernetesVersion)
	}
	return version, nil
}

// KubernetesVersion is the release the cluster runs (its API server's
// /version); "" before Start.
func (c *Cluster) KubernetesVersion() string { return c.version }

// startSimulator runs the device-plugin simulator: as SimulatorCommand,
// or in-process unless the testbed is detached.
func (c *Cluster) startSimulator(host *testbed.Host) error {
	kubeconfig := c.layout.kubeconfig(simulatorIdentity)
	if cmd := c.opts.SimulatorCommand; len(cmd) > 0 {
		return host.StartProcess(simulatorIdentity, cmd[0], append(cmd[1:len(cmd):len(cmd)], "--kubeconfig", kubeconfig)...)
	}
	if host.Detached() {
		return nil
	}
	l := c.layout
	client, err := kubernetes.NewForConfig(withProtobuf(restConfigFor(l.apiServerURL(), l.creds.caPEM, l.creds.clients[simulatorIdentity])))
	if err != nil {
		return fmt.Errorf("creating the device-plugin simulator's client: %w", err)
	}
	return host.Go(simulatorIdentity, func(ctx context.Context, log io.Writer) error {
		return RunSimulators(ctx, client, log)
	})
}

// Env points kubectl, terraform and client-go at the cluster, and says
// which of the testbed's Kubernetes releases it runs in the variable that
// chooses it (testbed.KubernetesChoiceEnv), so that a shell that evaluates
// `gpu-testbed env` starts the same release next.
func (c *Cluster) Env() map[string]string {
	return map[string]string{
		"KUBECONFIG":                c.KubeconfigPath(),
		testbed.KubernetesChoiceEnv: testbed.KubernetesChoice(c.version),
	}
}

// KubeconfigPath is a kubeconfig for a cluster admin (system:masters) that
// verifies the API server's certificate against the testbed's CA.
func (c *Cluster) KubeconfigPath() string { return c.layout.kubeconfig("admin") }

// APIServerURL is the API server's https://127.0.0.1:<port> address.
func (c *Cluster) APIServerURL() string {
	if c.layout == nil {
		return c.attachedURL
	}
	return c.layout.apiServerURL()
}

// RESTConfig is a copy of the cluster admin's client configuration, with
// client-side rate limiting off.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Client is a cluster-admin clientset (speaking protobuf, without
// client-side rate limiting).
func (c *Cluster) Client() kubernetes.Interface { return c.client }
