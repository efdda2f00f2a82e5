package gpuhealth

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func nodeWith(cond *corev1.NodeCondition, annotation *string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-p5-1"}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	if cond != nil {
		n.Status.Conditions = append(n.Status.Conditions, *cond)
	}
	if annotation != nil {
		n.Annotations = map[string]string{AnnotationUnhealthyGPUs: *annotation}
	}
	return n
}

func TestReadNode(t *testing.T) {
	since := time.Date(2026, 11, 26, 10, 42, 0, 0, time.UTC)
	gpus := []UnhealthyGPU{{GPURef: GPURef{Index: 3, UUID: "GPU-3", PCIBusID: "0000:9a:00.0"}, Reason: "NvidiaXID79Error"}}
	encoded := EncodeUnhealthy(gpus)
	garbage := "[{index: 3"
	fatal := &corev1.NodeCondition{
		Type: ConditionType, Status: corev1.ConditionFalse, Reason: "NvidiaXID79Error",
		Message: "XID 79 on GPU 3", LastTransitionTime: metav1.NewTime(since),
	}

	t.Run("a node without the condition is not reported", func(t *testing.T) {
		h := ReadNode(nodeWith(nil, nil))
		if h.Reported || h.Status != "" || len(h.Unhealthy) != 0 {
			t.Errorf("ReadNode = %+v, want nothing reported", h)
		}
	})
	t.Run("a nil node is not reported", func(t *testing.T) {
		if h := ReadNode(nil); h.Reported {
			t.Errorf("ReadNode(nil) = %+v", h)
		}
	})
	t.Run("the condition and the annotation are read", func(t *testing.T) {
		h := ReadNode(nodeWith(fatal, &encoded))
		if !h.Reported || h.Status != corev1.ConditionFalse || h.Reason != "NvidiaXID79Error" || h.Message != "XID 79 on GPU 3" {
			t.Errorf("ReadNode = %+v", h)
		}
		if !h.Since.Equal(since) {
			t.Errorf("Since = %v, want the LastTransitionTime %v", h.Since, since)
		}
		if !slices.Equal(h.Unhealthy, gpus) {
			t.Errorf("Unhealthy = %+v, want %+v", h.Unhealthy, gpus)
		}
	})
	t.Run("a garbled annotation keeps the condition and no GPUs", func(t *testing.T) {
		h := ReadNode(nodeWith(fatal, &garbage))
		if !h.Reported || h.Status != corev1.ConditionFalse || h.Reason != "NvidiaXID79Error" {
			t.Errorf("ReadNode = %+v, want the condition kept", h)
		}
		if len(h.Unhealthy) != 0 {
			t.Errorf("Unhealthy = %+v from a garbled annotation", h.Unhealthy)
		}
	})
	t.Run("an annotation without the condition is still read", func(t *testing.T) {
		h := ReadNode(nodeWith(nil, &encoded))
		if h.Reported || !slices.Equal(h.Unhealthy, gpus) {
			t.Errorf("ReadNode = %+v", h)
		}
	})
}

func TestEncodeDecodeUnhealthy(t *testing.T) {
	gpus := []UnhealthyGPU{
		{GPURef: GPURef{Index: 0}, Reason: "NvidiaDoubleBitError"},
		{GPURef: GPURef{Index: 3, UUID: "GPU-3", PCIBusID: "0000:9a:00.0"}, Reason: "NvidiaXID79Error"},
	}
	s := EncodeUnhealthy(gpus)
	if want := `[{"index":0,"reason":"NvidiaDoubleBitError"},{"index":3,"uuid":"GPU-3","pci_bus_id":"0000:9a:00.0","reason":"NvidiaXID79Error"}]`; s != want {
		t.Errorf("EncodeUnhealthy =\n  %s\nwant\n  %s", s, want)
	}
	got, err := DecodeUnhealthy(s)
	if err != nil || !slices.Equal(got, gpus) {
		t.Errorf("DecodeUnhealthy(EncodeUnhealthy(x)) = %+v, %v; want %+v", got, err, gpus)
	}
	if s := EncodeUnhealthy(nil); s != "" {
		t.Errorf("EncodeUnhealthy(nil) = %q, want empty", s)
	}
	if s := EncodeUnhealthy([]UnhealthyGPU{}); s != "" {
		t.Errorf("EncodeUnhealthy(empty) = %q, want empty", s)
	}
	if got, err := DecodeUnhealthy(""); err != nil || len(got) != 0 {
		t.Errorf("DecodeUnhealthy(\"\") = %v, %v; want none", got, err)
	}
	if got, err := DecodeUnhealthy("[]"); err != nil || len(got) != 0 {
		t.Errorf("DecodeUnhealthy([]) = %v, %v; want none", got, err)
	}
	for _, bad := range []string{"[{index: 3", `{"index":3}`, "GPU 3"} {
		_, err := DecodeUnhealthy(bad)
		if err == nil || !strings.Contains(err.Error(), AnnotationUnhealthyGPUs) {
			t.Errorf("DecodeUnhealthy(%q) = %v, want an error naming the annotation", bad, err)
		}
	}
}
