package k8s

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// layout is where the cluster keeps its files and which ports it listens on.
type layout struct {
	dir   string
	ports ports
	creds *credentials
	// withoutDRA turns Dynamic Resource Allocation off (Options.WithoutDRA).
	withoutDRA bool
}

// ports are the cluster's loopback ports.
type ports struct {
	etcdClient, etcdPeer, apiServer, controllerManager, scheduler int
}

func allocatePorts(host *testbed.Host) (ports, error) {
	p, err := host.FreePorts("etcd-client", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
	if err != nil {
		return ports{}, err
	}
	return ports{etcdClient: p[0], etcdPeer: p[1], apiServer: p[2], controllerManager: p[3], scheduler: p[4]}, nil
}

func (l *layout) apiServerURL() string { return "https://127.0.0.1:" + strconv.Itoa(l.ports.apiServer) }
func (l *layout) etcdClientURL() string {
	return "https://127.0.0.1:" + strconv.Itoa(l.ports.etcdClient)
}
func (l *layout) etcdPeerURL() string { return "http://127.0.0.1:" + strconv.Itoa(l.ports.etcdPeer) }
func (l *layout) kubeconfig(component string) string {
	return filepath.Join(l.dir, component+".kubeconfig")
}
func (l *layout) kwokConfigPath() string { return filepath.Join(l.dir, "kwok.yaml") }

// etcdArgs: a single member serving clients over TLS with client
// certificates. It has no peers, but it listens on a peer port all the
// same: that one must not be etcd's default :2380, which another testbed
// would want, and it requires client certificates too.
func (l *layout) etcdArgs() []string {
	return []string{
		"--name=testbed",
		"--data-dir=" + filepath.Join(l.dir, "etcd"),
		"--listen-client-urls=" + l.etcdClientURL(),
		"--advertise-client-urls=" + l.etcdClientURL(),
		"--listen-peer-urls=" + l.etcdPeerURL(),
		"--initial-advertise-peer-urls=" + l.etcdPeerURL(),
		"--initial-cluster=testbed=" + l.etcdPeerURL(),
		"--initial-cluster-state=new",
		"--cert-file=" + l.creds.etcdServerCertFile,
		"--key-file=" + l.creds.etcdServerKeyFile,
		"--trusted-ca-file=" + l.creds.caFile,
		"--client-cert-auth=true",
		"--peer-cert-file=" + l.creds.etcdServerCertFile,
		"--peer-key-file=" + l.creds.etcdServerKeyFile,
		"--peer-trusted-ca-file=" + l.creds.caFile,
		"--peer-client-cert-auth=true",
		"--logger=zap",
		"--log-outputs=stderr",
		"--log-level=warn",
	}
}

func (l *layout) apiServerArgs(tokenWebhookConfig string) []string {
	args := []string{
		"--etcd-servers=" + l.etcdClientURL(),
		"--etcd-cafile=" + l.creds.caFile,
		"--etcd-certfile=" + l.creds.etcdClientCertFile,
		"--etcd-keyfile=" + l.creds.etcdClientKeyFile,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The reconciler would publish 127.0.0.1 as the endpoint of the
		// "kubernetes" Service, which Endpoints validation rejects.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(l.ports.apiServer),
		"--cert-dir=" + filepath.Join(l.dir, "apiserver-certs"),
		"--tls-cert-file=" + l.creds.apiServerCertFile,
		"--tls-private-key-file=" + l.creds.apiServerKeyFile,
		"--client-ca-file=" + l.creds.caFile,
		"--requestheader-client-ca-file=" + l.creds.frontProxyCAFile,
		"--requestheader-allowed-names=" + frontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + l.creds.frontProxyClientCertFile,
		"--proxy-client-key-file=" + l.creds.frontProxyClientKeyFile,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=" + serviceClusterIPRange,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + l.creds.serviceAccountPublicKeyFile,
		"--service-account-signing-key-file=" + l.creds.serviceAccountKeyFile,
		// A token is authenticated against its service account (name and
		// UID) whenever the API server's 10-second cache of successful
		// token authentications (which has no flag) has lapsed: deleting
		// the account revokes its tokens, as on any cluster. It is the
		// default; written out, it stays so.
		"--service-account-lookup=true",
		"--allow-privileged=true", // device plugin and driver DaemonSets are privileged
		// Never dial a node's host name; the testbed's nodes all say 127.0.0.1.
		"--kubelet-preferred-address-types=InternalIP",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--v=1",
	}
	if l.withoutDRA {
		args = append(args, "--runtime-config=resource.k8s.io/v1=false")
	}
	args = append(args, l.featureGateArgs()...)
	if tokenWebhookConfig != "" {
		args = append(args,
			"--authentication-token-webhook-config-file="+tokenWebhookConfig,
			"--authentication-token-webhook-version=v1",
		)
	}
	return args
}

// controllerManagerArgs: every default controller, with its own identity
// (see clientIdentities) rather than per-controller service accounts.
func (l *layout) controllerManagerArgs() []string {
	args := append(l.componentArgs("kube-controller-manager", l.ports.controllerManager, "controller-manager-certs"),
		"--controllers=*",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file="+l.creds.serviceAccountKeyFile,
		"--root-ca-file="+l.creds.caFile,
		"--service-cluster-ip-range="+serviceClusterIPRange,
		// kwok renews node leases every nodeLeaseDurationSeconds/4; allow
		// for a missed renewal on a busy machine before a node goes NotReady.
		fmt.Sprintf("--node-monitor-grace-period=%ds", 2*nodeLeaseDurationSeconds),
	)
	return append(args, l.featureGateArgs()...)
}

func (l *layout) schedulerArgs() []string {
	return append(l.componentArgs("kube-scheduler", l.ports.scheduler, "scheduler-certs"), l.featureGateArgs()...)
}

// featureGateArgs are the --feature-gates every control-plane component
// gets: none (each release's defaults) unless DRA is off. No alpha gate is
// ever turned on here.
func (l *layout) featureGateArgs() []string {
	if l.withoutDRA {
		return []string{"--feature-gates=DynamicResourceAllocation=false"}
	}
	return nil
}

// componentArgs are what kube-controller-manager and kube-scheduler share:
// their identity's kubeconfig (for the API and for delegated
// authentication and authorization), a loopback serving port, a single
// instance without leader election.
func (l *layout) componentArgs(identity string, port int, certDir string) []string {
	kubeconfig := l.kubeconfig(identity)
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(l.dir, certDir),
		"--leader-elect=false",
		// The default 20 requests/s would take minutes to lift the
		// not-ready taint from thousands of new nodes.
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
		"--profiling=false",
		"--v=1",
	}
}

// kwokArgs: kwok simulates the kubelets of the nodes annotated
// kwok.x-k8s.io/node=fake only; its own HTTP server (logs, exec, metrics)
// is off.
func (l *layout) kwokArgs() []string {
	return []string{
		"--kubeconfig=" + l.kubeconfig("kwok"),
		"--config=" + l.kwokConfigPath(),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=" + KwokNodeAnnotationValue,
		"--node-ip=127.0.0.1",
		"--cidr=" + podCIDR,
		fmt.Sprintf("--node-lease-duration-seconds=%d", nodeLeaseDurationSeconds),
		"--v=WARN", // at INFO it logs every lease renewal
	}
}
