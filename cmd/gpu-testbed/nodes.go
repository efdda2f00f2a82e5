package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuinfra/terraform-provider-gpu/internal/gpulabels"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvdra"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

func runNodes(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("nodes", flag.ContinueOnError)
	dirArg := dirFlag(flags)
	if err := flags.Parse(args); err != nil {
		return err
	}
	state, err := runningTestbed(*dirArg)
	if err != nil {
		return err
	}
	kubeconfig := state.Env["KUBECONFIG"]
	if kubeconfig == "" {
		return fmt.Errorf("the testbed in %s runs no Kubernetes backend", state.Dir)
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}

	slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector(resourceapi.ResourceSliceSelectorDriver, nvdra.DriverName).String(),
	})
	if err != nil && !apierrors.IsNotFound(err) { // NotFound: a cluster that serves no DRA
		return fmt.Errorf("listing ResourceSlices: %w", err)
	}
	draDevices := map[string]int{}
	for i := 0; err == nil && i < len(slices.Items); i++ {
		if slice := slices.Items[i]; slice.Spec.NodeName != nil {
			draDevices[*slice.Spec.NodeName] += len(slice.Spec.Devices)
		}
	}

	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tINSTANCE TYPE\tGPU PRODUCT\tGPUS\tDRA DEVICES\tREADY")
	for _, node := range nodes.Items {
		product := node.Labels[gpulabels.Product]
		if product == "" {
			product = "-"
		}
		gpus := node.Status.Allocatable[gpulabels.ResourceName]
		published := "-"
		if node.Labels[k8s.DRANodeLabel] == "true" {
			published = strconv.Itoa(draDevices[node.Name])
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", node.Name, node.Labels[corev1.LabelInstanceTypeStable], product, gpus.String(), published, readyStatus(&node))
	}
	return w.Flush()
}

func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}
