package gpulabels

import "testing"

func TestProductLabel(t *testing.T) {
	for name, want := range map[string]string{
		"NVIDIA H100 80GB HBM3":  "NVIDIA-H100-80GB-HBM3",
		"NVIDIA A100-SXM4-40GB":  "NVIDIA-A100-SXM4-40GB",
		"Tesla T4":               "Tesla-T4",
		" NVIDIA  L4 ":           "NVIDIA-L4",
		"NVIDIA RTX A6000 (x)":   "NVIDIA-RTX-A6000-x",
		"NVIDIA GH200 480GB/v2!": "NVIDIA-GH200-480GBv2",
	} {
		if got := ProductLabel(name); got != want {
			t.Errorf("ProductLabel(%q) = %q, want %q", name, got, want)
		}
	}
}
