package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

var _ validator.Int64 = replicasBound{}

// The most replicas a shared GPU may be advertised as. NVIDIA's device
// plugin sets no upper bound (api/config/v1 ReplicatedResource only
// requires replicas > 0); the limits are elsewhere, and a value past them
// is accepted by the API server and the plugin and fails only on the node.
var (
	// timeSlicingReplicas: the plugin advertises every replica as its own
	// device, "<GPU or MIG UUID>::<replica>", and sends all the devices of
	// a resource in one ListAndWatchResponse. The kubelet's device manager
	// dials the plugin with gRPC's default 4 MiB receive limit
	// (pkg/kubelet/cm/devicemanager/plugin/v1beta1/client.go sets no
	// MaxCallRecvMsgSize), so a larger list never arrives and the node
	// advertises nothing. A device encodes to about 64 bytes (a 40-byte
	// UUID, "::" and the replica number, health "Healthy", a NUMA node):
	// measured with the kubelet's v1beta1 types, 8 GPUs x 10000 replicas is
	// 5,191,120 bytes, over the limit. 512 keeps the largest node we know
	// of under it: 16 GPUs (GCP a2-megagpu-16g) each split into 7 MIG
	// instances is 112 devices, x 512 = 3,657,696 bytes. Every replica is
	// also a CUDA context of a few hundred MiB on the GPU, so no GPU holds
	// that many pods anyway.
	timeSlicingReplicas = replicasBound{block: "time_slicing", max: 512,
		why: "the kubelet receives a node's shared devices in one 4 MiB gRPC message, which 16 GPUs with 7 MIG instances each, " +
			"each advertised more than 512 times, overflow"}
	// mpsReplicas: the plugin's MPS control daemon gives each client
	// 100/replicas percent of the GPU's threads, in integers
	// (cmd/mps-control-daemon/mps/daemon.go activeThreadPercentage), which
	// is 0% above 100 replicas.
	mpsReplicas = replicasBound{block: "mps", max: 100,
		why: "the plugin's MPS daemon gives each client 100/replicas percent of the GPU's threads, in whole percents, which is 0% above 100"}
)

// replicasBound rejects more replicas than a sharing strategy can serve,
// saying why.
type replicasBound struct {
	block string // time_slicing or mps
	max   int64
	why   string
}

func (b replicasBound) Description(context.Context) string {
	return fmt.Sprintf("value must be at most %d", b.max)
}

func (b replicasBound) MarkdownDescription(ctx context.Context) string { return b.Description(ctx) }

func (b replicasBound) ValidateInt64(_ context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() || req.ConfigValue.ValueInt64() <= b.max {
		return
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Too many replicas",
		fmt.Sprintf("%s = %d is more than %s supports: at most %d, because %s. Lower it; to give more pods a GPU, add GPUs or nodes.",
			req.Path, req.ConfigValue.ValueInt64(), b.block, b.max, b.why))
}
