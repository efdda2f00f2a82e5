package testbed

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// layout is where one testbed keeps its files and which ports it listens on.
type layout struct {
	dir   string
	ports Ports
	creds *credentials
}

// Ports are the loopback ports of one testbed.
type Ports struct {
	EtcdClient        int `json:"etcdClient"`
	EtcdPeer          int `json:"etcdPeer"`
	APIServer         int `json:"apiServer"`
	ControllerManager int `json:"controllerManager"`
	Scheduler         int `json:"scheduler"`
}

func allocatePorts() (Ports, error) {
	p, err := freeLoopbackPorts(5)
	if err != nil {
		return Ports{}, err
	}
	return Ports{EtcdClient: p[0], EtcdPeer: p[1], APIServer: p[2], ControllerManager: p[3], Scheduler: p[4]}, nil
}

func (l *layout) apiServerURL() string { return "https://127.0.0.1:" + strconv.Itoa(l.ports.APIServer) }
func (l *layout) etcdClientURL() string {
	return "https://127.0.0.1:" + strconv.Itoa(l.ports.EtcdClient)
}
func (l *layout) etcdPeerURL() string { return "http://127.0.0.1:" + strconv.Itoa(l.ports.EtcdPeer) }
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

func (l *layout) apiServerArgs() []string {
	return []string{
		"--etcd-servers=" + l.etcdClientURL(),
		"--etcd-cafile=" + l.creds.caFile,
		"--etcd-certfile=" + l.creds.etcdClientCertFile,
		"--etcd-keyfile=" + l.creds.etcdClientKeyFile,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The reconciler would publish 127.0.0.1 as the endpoint of the
		// "kubernetes" Service, which Endpoints validation rejects.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(l.ports.APIServer),
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
		"--allow-privileged=true", // device plugin and driver DaemonSets are privileged
		// Never dial a node's host name; the testbed's nodes all say 127.0.0.1.
		"--kubelet-preferred-address-types=InternalIP",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--v=1",
	}
}

// controllerManagerArgs: every default controller, with its own identity
// (see clientIdentities) rather than per-controller service accounts.
func (l *layout) controllerManagerArgs() []string {
	kubeconfig := l.kubeconfig("kube-controller-manager")
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(l.ports.ControllerManager),
		"--cert-dir=" + filepath.Join(l.dir, "controller-manager-certs"),
		"--controllers=*",
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + l.creds.serviceAccountKeyFile,
		"--root-ca-file=" + l.creds.caFile,
		"--service-cluster-ip-range=" + serviceClusterIPRange,
		// kwok renews node leases every nodeLeaseDurationSeconds/4; allow
		// for a missed renewal on a busy machine before a node goes NotReady.
		fmt.Sprintf("--node-monitor-grace-period=%ds", 2*nodeLeaseDurationSeconds),
		// The default 20 requests/s would take minutes to lift the
		// not-ready taint from thousands of new nodes.
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
		"--profiling=false",
		"--v=1",
	}
}

func (l *layout) schedulerArgs() []string {
	kubeconfig := l.kubeconfig("kube-scheduler")
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(l.ports.Scheduler),
		"--cert-dir=" + filepath.Join(l.dir, "scheduler-certs"),
		"--leader-elect=false",
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
