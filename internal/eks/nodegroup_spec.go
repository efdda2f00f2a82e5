package eks

import "time"

// NodeGroupSpec is an EKS managed node group as the caller wants it (and,
// inside NodeGroup, as EKS reports it).
type NodeGroupSpec struct {
	ClusterName, Name  string
	NodeRoleARN        string
	SubnetIDs          []string
	InstanceTypes      []string
	AMIType            string // EKS enum, e.g. "AL2023_x86_64_NVIDIA"
	CapacityType       string // "ON_DEMAND", "SPOT", "CAPACITY_BLOCK"
	Scaling            Scaling
	UpdateConfig       *UpdateConfig
	NodeRepair         *NodeRepairConfig // nil: not sent (EKS's default, disabled)
	DiskSize           int32             // 0: unset
	Labels             map[string]string
	Taints             []Taint
	LaunchTemplate     *LaunchTemplate
	ReleaseVersion     string
	Version            string
	ForceUpdateVersion bool
	Tags               map[string]string

	CapacityReservation *CapacityTarget // launch_template*.go
}

// Scaling is the node group's Auto Scaling size.
type Scaling struct{ Min, Max, Desired int32 }

// UpdateConfig bounds how many nodes a rolling update takes down at once (0:
// unset) and how it replaces them: UpdateStrategy "DEFAULT" (new nodes
// first) or "MINIMAL" (old nodes first); "": unset.
type UpdateConfig struct {
	MaxUnavailable, MaxUnavailablePercentage int32
	UpdateStrategy                           string
}

// Taint is a Kubernetes taint in EKS's form: Effect is "NO_SCHEDULE",
// "NO_EXECUTE" or "PREFER_NO_SCHEDULE".
type Taint struct{ Key, Value, Effect string }

// LaunchTemplate names an EC2 launch template by ID or name, and its version.
type LaunchTemplate struct{ ID, Name, Version string }

// NodeGroup is a node group as DescribeNodegroup reports it.
type NodeGroup struct {
	NodeGroupSpec
	ARN, Status           string
	Health                []Issue
	AutoScalingGroupNames []string
	CreatedAt             time.Time
}
