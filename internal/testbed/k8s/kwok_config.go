package k8s

import (
	_ "embed"
	"fmt"
	"os"
)

// nodeLeaseDurationSeconds is the lease duration kwok sets on node leases;
// it renews them every quarter of it, like a kubelet. A kubelet uses 40 s;
// a longer one keeps a 5,000-node testbed from spending the machine on
// lease renewals (kube-controller-manager's grace period is twice this).
const nodeLeaseDurationSeconds = 120

// podCIDR is where kwok takes pod IPs from: data only, nothing routes it.
const podCIDR = "10.244.0.0/16"

// kwokConfig is the configuration file kwok reads (--config, which also
// keeps a user's ~/.kwok/kwok.yaml out of the testbed). Its stages replace
// kwok's defaults. Node stages: a node is marked Ready as soon as kwok sees
// it (keeping the capacity, addresses and node info the cluster
// registered), and its Ready condition is refreshed every five to six
// minutes, as a kubelet reports status while its lease carries the
// heartbeat. Pod stages: kwok's own defaults (pods bound to a kwok node
// become Running and Ready, pods of a Job then Succeed unless they carry
// KeepRunningAnnotation, deleted pods go away) for pods without
// FailExitCodeAnnotation, and for pods with it the
// failures the package comment describes.
//
//go:embed kwok_config.yaml
var kwokConfig string

func writeKwokConfig(path string) error {
	if err := os.WriteFile(path, []byte(kwokConfig), 0o600); err != nil {
		return fmt.Errorf("writing the kwok configuration: %w", err)
	}
	return nil
}
