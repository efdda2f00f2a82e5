package k8s

import (
	"fmt"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Attach is a Cluster for a cluster another process started, reached
// through its admin kubeconfig (KubeconfigPath): for programs that join a
// detached testbed, such as the AWS emulator's process, which registers
// node groups' nodes. Only its node and client methods work (AddNode,
// DeleteNode, WaitForNodesReady, Client, RESTConfig); APIServerURL is the
// kubeconfig's server.
func Attach(kubeconfigPath string) (*Cluster, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
	if err != nil {
		return nil, fmt.Errorf("loading the testbed kubeconfig %s: %w", kubeconfigPath, err)
	}
	config.QPS, config.Burst = -1, 0
	client, err := kubernetes.NewForConfig(withProtobuf(config))
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	return &Cluster{restConfig: config, client: client, attachedURL: config.Host}, nil
}

// AdminKubeconfigIn is where a cluster started in the testbed directory
// testbedDir writes its admin kubeconfig (KubeconfigPath); it is known
// before the cluster starts.
func AdminKubeconfigIn(testbedDir string) string {
	l := layout{dir: filepath.Join(testbedDir, (&Cluster{}).Name())}
	return l.kubeconfig("admin")
}
