package podresources

import (
	"context"
	"net"
	"path/filepath"
	"reflect"
	"testing"

	v1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry/podresources/podresourcestest"
)

func pod(namespace, name string, containers ...*v1.ContainerResources) *v1.PodResources {
	return &v1.PodResources{Namespace: namespace, Name: name, Containers: containers}
}

func container(name, resource string, ids ...string) *v1.ContainerResources {
	return &v1.ContainerResources{Name: name, Devices: []*v1.ContainerDevices{{ResourceName: resource, DeviceIds: ids}}}
}

func TestDevicesMapsGPUsMIGDevicesAndTimeSlicedReplicas(t *testing.T) {
	socket, kubelet := podresourcestest.Start(t, &v1.ListPodResourcesResponse{PodResources: []*v1.PodResources{
		pod("ml", "trainer-0", container("trainer", "nvidia.com/gpu", "GPU-aaaa", "GPU-bbbb")),
		pod("ml", "notebook", container("jupyter", "nvidia.com/mig-1g.5gb", "MIG-cccc")),
		// Time-slicing: two pods hold replicas of one GPU; the first by
		// namespace/pod/container gets the labels, whatever the order.
		pod("team-b", "infer-2", container("server", "nvidia.com/gpu", "GPU-dddd::1")),
		pod("team-a", "infer-1", container("server", "nvidia.com/gpu", "GPU-dddd::0")),
		pod("team-c", "shared", container("app", "nvidia.com/gpu.shared", "GPU-eeee::4")),
		pod("team-c", "mig-shared", container("app", "nvidia.com/mig-1g.10gb.shared", "MIG-ffff::2")),
		// Not NVIDIA devices: ignored.
		pod("net", "sriov", container("app", "intel.com/sriov", "0000:3b:02.0")),
		pod("sys", "no-devices", &v1.ContainerResources{Name: "app"}),
	}})

	got, err := Lister{Socket: socket}.Devices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Container{
		"GPU-aaaa": {"ml", "trainer-0", "trainer"},
		"GPU-bbbb": {"ml", "trainer-0", "trainer"},
		"MIG-cccc": {"ml", "notebook", "jupyter"},
		"GPU-dddd": {"team-a", "infer-1", "server"},
		"GPU-eeee": {"team-c", "shared", "app"},
		"MIG-ffff": {"team-c", "mig-shared", "app"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Devices() =\n%v\nwant\n%v", got, want)
	}
	if n := kubelet.Calls(); n != 1 {
		t.Errorf("List called %d times, want 1", n)
	}
}

func TestDevicesWithoutASocketIsEmpty(t *testing.T) {
	got, err := Lister{Socket: filepath.Join(t.TempDir(), "kubelet.sock")}.Devices(context.Background())
	if err != nil || len(got) != 0 {
		t.Errorf("Devices() = %v, %v; want an empty map and no error on a machine that is not a Kubernetes node", got, err)
	}
}

func TestDevicesFailsWhenTheKubeletDoesNotAnswer(t *testing.T) {
	// A socket file nobody serves: a kubelet that died and left it behind.
	socket := filepath.Join(t.TempDir(), "kubelet.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	if unix, ok := ln.(*net.UnixListener); ok {
		unix.SetUnlinkOnClose(false)
	}
	ln.Close()

	if _, err := (Lister{Socket: socket}).Devices(context.Background()); err == nil {
		t.Error("Devices() succeeded against a socket nobody serves")
	}
}

func TestDeviceUUID(t *testing.T) {
	for id, want := range map[string]string{
		"GPU-8f6c0b5e-0000-4000-8000-000000000001":    "GPU-8f6c0b5e-0000-4000-8000-000000000001",
		"GPU-8f6c0b5e-0000-4000-8000-000000000001::7": "GPU-8f6c0b5e-0000-4000-8000-000000000001",
		"MIG-2ce7a541-c516-5dbc-a76e-26cc100d9b55::7": "MIG-2ce7a541-c516-5dbc-a76e-26cc100d9b55",
	} {
		if got := DeviceUUID(id); got != want {
			t.Errorf("DeviceUUID(%q) = %q, want %q", id, got, want)
		}
	}
}
