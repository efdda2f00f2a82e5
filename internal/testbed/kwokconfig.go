package testbed

import (
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
// keeps a user's ~/.kwok/kwok.yaml out of the testbed). Its node stages
// replace kwok's defaults: a node is marked Ready as soon as kwok sees it
// (keeping the capacity, addresses and node info the testbed registered),
// and its Ready condition is refreshed every five to six minutes, as a
// kubelet reports status while its lease carries the heartbeat. Pod stages
// are kwok's defaults: pods bound to a kwok node become Running and Ready,
// pods of a Job then Succeed, and deleted pods go away.
const kwokConfig = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  nodePlayStageParallelism: 16
  nodeLeaseParallelism: 16
  podPlayStageParallelism: 16
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: gpu-testbed-node-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ["True"]
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: gpu-testbed-node-status-report
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: In
      values: ["True"]
  delay:
    durationMilliseconds: 300000
    jitterDurationMilliseconds: 360000
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $since := or .metadata.creationTimestamp $now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $since | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
`

func writeKwokConfig(path string) error {
	if err := os.WriteFile(path, []byte(kwokConfig), 0o600); err != nil {
		return fmt.Errorf("writing the kwok configuration: %w", err)
	}
	return nil
}
