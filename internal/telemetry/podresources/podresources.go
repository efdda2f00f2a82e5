// Package podresources asks the kubelet which container holds each NVIDIA
// device on the node, through the kubelet's PodResources API v1 (gRPC List on
// the unix socket under /var/lib/kubelet/pod-resources), so GPU metrics can
// carry pod, namespace and container labels as dcgm-exporter's do.
//
// It reads the device plugin's allocations as the kubelet reports them and
// maps device IDs as dcgm-exporter does: a GPU UUID ("GPU-…") names a GPU, a
// MIG device UUID ("MIG-…") a MIG device, and the "::N" suffix the device
// plugin adds under time-slicing or MPS ("GPU-…::3") is dropped. Only the
// resources nvidia.com/gpu, nvidia.com/gpu.shared (time-slicing with
// renameByDefault) and nvidia.com/mig-* count.
//
// It does not reproduce dcgm-exporter's optional modes: pod labels and UIDs
// from the API server, one series per sharing pod (--kubernetes-virtual-gpus),
// GKE's device IDs ("nvidia0/gi1") and DRA claims. A device several
// containers share under time-slicing is given to one of them, the first by
// namespace, pod and container name, so the choice does not change between
// scrapes (dcgm-exporter keeps the last one the kubelet listed).
//
// It never talks to the API server; reading the socket usually needs root.
package podresources

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// DefaultSocket is where the kubelet serves the PodResources API.
const DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// defaultTimeout bounds one List call: the kubelet answers from memory, so a
// slow answer means it is stuck, and a scrape should not wait on it.
const defaultTimeout = 5 * time.Second

// Container is a container a device is allocated to.
type Container struct {
	Namespace string
	Pod       string
	Name      string
}

// Lister lists the kubelet's device allocations.
type Lister struct {
	// Socket is the kubelet's PodResources socket; "" means DefaultSocket.
	Socket string
	// Timeout bounds one List call; 0 means 5 s.
	Timeout time.Duration
}

// Devices returns the container each NVIDIA device is allocated to, keyed
// by GPU UUID or MIG device UUID. Devices no container holds are absent. When
// the socket does not exist (not a Kubernetes node, or the kubelet is not
// running) it returns an empty map and no error.
func (l Lister) Devices(ctx context.Context) (map[string]Container, error) {
	socket := l.Socket
	if socket == "" {
		socket = DefaultSocket
	}
	if _, err := os.Stat(socket); errors.Is(err, fs.ErrNotExist) {
		return map[string]Container{}, nil
	}
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// The unix scheme dials the socket itself; no DNS, no global resolver
	// setting.
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connecting to the kubelet's pod resources socket %s: %w", socket, err)
	}
	defer conn.Close()
	resp, err := v1.NewPodResourcesListerClient(conn).List(ctx, &v1.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing pod resources from the kubelet (%s): %w", socket, err)
	}
	return Assignments(resp), nil
}

// Assignments maps a List answer to the container holding each NVIDIA
// device, keyed by GPU UUID or MIG device UUID.
func Assignments(resp *v1.ListPodResourcesResponse) map[string]Container {
	holders := map[string][]Container{}
	for _, pod := range resp.GetPodResources() {
		for _, ctr := range pod.GetContainers() {
			holder := Container{Namespace: pod.GetNamespace(), Pod: pod.GetName(), Name: ctr.GetName()}
			for _, dev := range ctr.GetDevices() {
				if !nvidiaResource(dev.GetResourceName()) {
					continue
				}
				for _, id := range dev.GetDeviceIds() {
					id = DeviceUUID(id)
					holders[id] = append(holders[id], holder)
				}
			}
		}
	}
	out := make(map[string]Container, len(holders))
	for id, list := range holders {
		sort.Slice(list, func(i, j int) bool { return list[i].less(list[j]) })
		out[id] = list[0]
	}
	return out
}

func (c Container) less(o Container) bool {
	if c.Namespace != o.Namespace {
		return c.Namespace < o.Namespace
	}
	if c.Pod != o.Pod {
		return c.Pod < o.Pod
	}
	return c.Name < o.Name
}

// nvidiaResource says whether a resource name is one the NVIDIA device
// plugin advertises for GPUs or MIG devices.
func nvidiaResource(name string) bool {
	return name == "nvidia.com/gpu" || name == "nvidia.com/gpu.shared" || strings.HasPrefix(name, "nvidia.com/mig-")
}

// DeviceUUID turns a device plugin device ID into the device's UUID: the
// replica suffix time-slicing and MPS add ("GPU-…::3") goes.
func DeviceUUID(id string) string {
	base, _, _ := strings.Cut(id, "::")
	return base
}
