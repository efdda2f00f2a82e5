package kube

import "k8s.io/client-go/kubernetes"

// clusterOf wraps a test's clientset as a Cluster that does not track the
// API server's reachability: its waits end with their context only.
func clusterOf(client kubernetes.Interface) *Cluster {
	return &Cluster{client: client}
}
