package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// testPVC creates a PersistentVolume and a claim bound to it, so a pod that
// mounts the claim can be scheduled on the testbed, which has no storage
// provisioner.
func testPVC(t *testing.T, namespace, name string) {
	t.Helper()
	ctx := context.Background()
	client := cluster.Client()
	size := k8sresource.MustParse("100Gi")
	pvName := namespace + "-" + name
	_, err := client.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example.com", Path: "/" + name}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: namespace, Name: name},
			StorageClassName:              "",
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = client.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	empty := ""
	_, err = client.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			VolumeName:       pvName,
			StorageClassName: &empty,
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pvc, err := client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, nil
	})
	require.NoError(t, err, "claim %s/%s was not bound", namespace, name)
}

// testAccCheckWorkloadsGone is a CheckDestroy: after destroy nothing of a
// workload may be left in namespace, no pod above all, or later tests
// would count its GPUs as taken. Pods named holder-* are the tests' own.
func testAccCheckWorkloadsGone(namespace string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		client := cluster.Client()
		jobs, err := client.BatchV1().Jobs(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		deps, err := client.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var left []string
		for _, j := range jobs.Items {
			left = append(left, "job/"+j.Name)
		}
		for _, d := range deps.Items {
			left = append(left, "deployment/"+d.Name)
		}
		for _, p := range pods.Items {
			if !strings.HasPrefix(p.Name, "holder-") {
				left = append(left, "pod/"+p.Name)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("left in %s after destroy: %v", namespace, left)
		}
		return nil
	}
}

// nonEmptySubsetOf checks a list of strings is not empty and holds only allowed values.
type nonEmptySubsetOf []string

func (c nonEmptySubsetOf) CheckValue(v any) error {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return fmt.Errorf("expected a non-empty list, got %v", v)
	}
	for _, e := range list {
		if s, ok := e.(string); !ok || !slices.Contains(c, s) {
			return fmt.Errorf("%v is not one of %v", e, []string(c))
		}
	}
	return nil
}

func (c nonEmptySubsetOf) String() string { return fmt.Sprintf("non-empty subset of %v", []string(c)) }

// holdAllGPUs fills every GPU of node with one pod until the test ends,
// deleting it then and waiting until it is gone so later tests see the
// GPUs free.
func holdAllGPUs(t *testing.T, namespace, node string, gpus int64) {
	t.Helper()
	holdGPUs(t, namespace, "holder-"+node, node, gpus)
	t.Cleanup(func() {
		ctx := context.Background()
		pods := cluster.Client().CoreV1().Pods(namespace)
		_ = pods.Delete(ctx, "holder-"+node, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := pods.Get(ctx, "holder-"+node, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})
}
