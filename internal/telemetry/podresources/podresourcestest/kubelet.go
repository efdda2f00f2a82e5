// Package podresourcestest serves the kubelet's PodResources API v1 on a
// unix socket, for tests of the code that reads it: the real gRPC protocol
// over a real socket, with a response the test chooses.
package podresourcestest

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	v1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Kubelet answers List with Response and counts the calls.
type Kubelet struct {
	v1.UnimplementedPodResourcesListerServer
	Response *v1.ListPodResourcesResponse
	calls    atomic.Int32
}

// List answers as the kubelet does.
func (k *Kubelet) List(context.Context, *v1.ListPodResourcesRequest) (*v1.ListPodResourcesResponse, error) {
	k.calls.Add(1)
	return k.Response, nil
}

// Calls is how many List calls the kubelet answered.
func (k *Kubelet) Calls() int32 { return k.calls.Load() }

// Start serves resp on kubelet.sock in a temporary directory until the test
// ends, and returns the socket's path and the kubelet.
func Start(t testing.TB, resp *v1.ListPodResourcesResponse) (string, *Kubelet) {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "kubelet.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	kubelet := &Kubelet{Response: resp}
	v1.RegisterPodResourcesListerServer(srv, kubelet)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return socket, kubelet
}
