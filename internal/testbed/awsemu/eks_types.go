package awsemu

// The EKS REST-JSON documents, with the member names of the EKS API
// reference (and of aws-sdk-go-v2/service/eks's schemas).

type scalingConfig struct {
	MinSize     *int32 `json:"minSize,omitempty"`
	MaxSize     *int32 `json:"maxSize,omitempty"`
	DesiredSize *int32 `json:"desiredSize,omitempty"`
}

type eksTaint struct {
	Key    string `json:"key,omitempty"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect,omitempty"`
}

type launchTemplateSpec struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	ID      string `json:"id,omitempty"`
}

type nodegroupUpdateConfig struct {
	MaxUnavailable           *int32 `json:"maxUnavailable,omitempty"`
	MaxUnavailablePercentage *int32 `json:"maxUnavailablePercentage,omitempty"`
	UpdateStrategy           string `json:"updateStrategy,omitempty"`
}

// nodeRepairConfig is NodeRepairConfig (API_NodeRepairConfig).
type nodeRepairConfig struct {
	Enabled                             *bool                `json:"enabled,omitempty"`
	MaxUnhealthyNodeThresholdCount      *int32               `json:"maxUnhealthyNodeThresholdCount,omitempty"`
	MaxUnhealthyNodeThresholdPercentage *int32               `json:"maxUnhealthyNodeThresholdPercentage,omitempty"`
	MaxParallelNodesRepairedCount       *int32               `json:"maxParallelNodesRepairedCount,omitempty"`
	MaxParallelNodesRepairedPercentage  *int32               `json:"maxParallelNodesRepairedPercentage,omitempty"`
	NodeRepairConfigOverrides           []nodeRepairOverride `json:"nodeRepairConfigOverrides,omitempty"`
}

// nodeRepairOverride is NodeRepairConfigOverrides.
type nodeRepairOverride struct {
	NodeMonitoringCondition string `json:"nodeMonitoringCondition,omitempty"`
	NodeUnhealthyReason     string `json:"nodeUnhealthyReason,omitempty"`
	MinRepairWaitTimeMins   *int32 `json:"minRepairWaitTimeMins,omitempty"`
	RepairAction            string `json:"repairAction,omitempty"`
}

type remoteAccess struct {
	Ec2SshKey            string   `json:"ec2SshKey,omitempty"`
	SourceSecurityGroups []string `json:"sourceSecurityGroups,omitempty"`
}

// createNodegroupRequest is CreateNodegroup's body.
type createNodegroupRequest struct {
	NodegroupName      string                 `json:"nodegroupName"`
	ScalingConfig      *scalingConfig         `json:"scalingConfig"`
	DiskSize           *int32                 `json:"diskSize"`
	Subnets            []string               `json:"subnets"`
	InstanceTypes      []string               `json:"instanceTypes"`
	AmiType            string                 `json:"amiType"`
	RemoteAccess       *remoteAccess          `json:"remoteAccess"`
	NodeRole           string                 `json:"nodeRole"`
	Labels             map[string]string      `json:"labels"`
	Taints             []eksTaint             `json:"taints"`
	Tags               map[string]string      `json:"tags"`
	ClientRequestToken string                 `json:"clientRequestToken"`
	LaunchTemplate     *launchTemplateSpec    `json:"launchTemplate"`
	UpdateConfig       *nodegroupUpdateConfig `json:"updateConfig"`
	NodeRepairConfig   *nodeRepairConfig      `json:"nodeRepairConfig"`
	CapacityType       string                 `json:"capacityType"`
	Version            string                 `json:"version"`
	ReleaseVersion     string                 `json:"releaseVersion"`
}

type asgRef struct {
	Name string `json:"name"`
}

type nodegroupResources struct {
	AutoScalingGroups []asgRef `json:"autoScalingGroups"`
}

type healthIssue struct {
	Code        string   `json:"code"`
	Message     string   `json:"message"`
	ResourceIDs []string `json:"resourceIds,omitempty"`
}

type nodegroupHealth struct {
	Issues []healthIssue `json:"issues"`
}

// nodegroupDoc is the Nodegroup object DescribeNodegroup returns.
type nodegroupDoc struct {
	NodegroupName  string                 `json:"nodegroupName"`
	NodegroupArn   string                 `json:"nodegroupArn"`
	ClusterName    string                 `json:"clusterName"`
	Version        string                 `json:"version"`
	ReleaseVersion string                 `json:"releaseVersion,omitempty"`
	CreatedAt      float64                `json:"createdAt"`
	ModifiedAt     float64                `json:"modifiedAt"`
	Status         string                 `json:"status"`
	CapacityType   string                 `json:"capacityType"`
	ScalingConfig  scalingConfig          `json:"scalingConfig"`
	InstanceTypes  []string               `json:"instanceTypes,omitempty"`
	Subnets        []string               `json:"subnets"`
	RemoteAccess   *remoteAccess          `json:"remoteAccess,omitempty"`
	AmiType        string                 `json:"amiType"`
	NodeRole       string                 `json:"nodeRole"`
	Labels         map[string]string      `json:"labels"`
	Taints         []eksTaint             `json:"taints,omitempty"`
	Resources      *nodegroupResources    `json:"resources,omitempty"`
	DiskSize       *int32                 `json:"diskSize,omitempty"`
	Health         nodegroupHealth        `json:"health"`
	UpdateConfig   *nodegroupUpdateConfig `json:"updateConfig,omitempty"`
	NodeRepair     *nodeRepairConfig      `json:"nodeRepairConfig,omitempty"`
	LaunchTemplate *launchTemplateSpec    `json:"launchTemplate,omitempty"`
	Tags           map[string]string      `json:"tags"`
}

type updateParam struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

type errorDetail struct {
	ErrorCode    string   `json:"errorCode"`
	ErrorMessage string   `json:"errorMessage"`
	ResourceIDs  []string `json:"resourceIds,omitempty"`
}

// updateDoc is the Update object of DescribeUpdate and the update calls.
type updateDoc struct {
	ID        string        `json:"id"`
	Status    string        `json:"status"`
	Type      string        `json:"type"`
	Params    []updateParam `json:"params"`
	CreatedAt float64       `json:"createdAt"`
	Errors    []errorDetail `json:"errors"`
}

type labelsUpdate struct {
	AddOrUpdateLabels map[string]string `json:"addOrUpdateLabels"`
	RemoveLabels      []string          `json:"removeLabels"`
}

type taintsUpdate struct {
	AddOrUpdateTaints []eksTaint `json:"addOrUpdateTaints"`
	RemoveTaints      []eksTaint `json:"removeTaints"`
}

type updateNodegroupConfigRequest struct {
	Labels             *labelsUpdate          `json:"labels"`
	Taints             *taintsUpdate          `json:"taints"`
	ScalingConfig      *scalingConfig         `json:"scalingConfig"`
	UpdateConfig       *nodegroupUpdateConfig `json:"updateConfig"`
	NodeRepairConfig   *nodeRepairConfig      `json:"nodeRepairConfig"`
	ClientRequestToken string                 `json:"clientRequestToken"`
}

type updateNodegroupVersionRequest struct {
	Version            string              `json:"version"`
	ReleaseVersion     string              `json:"releaseVersion"`
	LaunchTemplate     *launchTemplateSpec `json:"launchTemplate"`
	Force              bool                `json:"force"`
	ClientRequestToken string              `json:"clientRequestToken"`
}
