package awsemu

import (
	"net/http"
	"regexp"
	"slices"
	"strings"

	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
)

// The CreateNodegroup rules the EKS API reference states
// (https://docs.aws.amazon.com/eks/latest/APIReference/: API_CreateNodegroup,
// API_NodegroupScalingConfig, API_UpdateLabelsPayload (label keys and
// values 1 to 63 characters), API_Taint (key 1 to 63, value up to 63,
// effect NO_SCHEDULE, NO_EXECUTE or PREFER_NO_SCHEDULE; at most 50 taints
// per node group), API_NodegroupUpdateConfig,
// API_LaunchTemplateSpecification).

// The enums CreateNodegroup accepts, as the SDK's EKS model lists them.
var (
	amiTypes      = enumValues(ekstypes.AMITypes("").Values())
	capacityTypes = enumValues(ekstypes.CapacityTypes("").Values())
	taintEffects  = enumValues(ekstypes.TaintEffect("").Values())
)

func enumValues[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

var (
	nodegroupNamePattern = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9\-_]*$`)
	roleARNPattern       = regexp.MustCompile(`^arn:aws:iam::\d{12}:role/[\w+=,.@/-]+$`)
)

// The taint key and value rules of the EKS User Guide ("Node taints on
// managed node groups", node-taints-managed-node-groups.html): a key
// begins with a letter or number and holds letters, numbers, '-', '.' and
// '_', optionally after a DNS subdomain prefix and a single '/'; a value
// is optional and follows the same rule. The API reference's length
// limits (taintKey 1..63, taintValue 0..63) apply to the whole string.
var (
	taintNamePattern   = regexp.MustCompile(`^[A-Za-z0-9][-A-Za-z0-9_.]*$`)
	dnsSubdomainPrefix = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

func validTaintKey(key string) bool {
	prefix, name, prefixed := strings.Cut(key, "/")
	if !prefixed {
		return taintNamePattern.MatchString(key)
	}
	return dnsSubdomainPrefix.MatchString(prefix) && taintNamePattern.MatchString(name)
}

// maxTaints is EKS's limit on taints per node group.
const maxTaints = 50

// maxLabelKeyLength and maxLabelValueLength are EKS's Labels limits (key
// 1..63, value 1..63), stricter than Kubernetes's for prefixed keys.
const (
	defaultInstanceType = "t3.medium"
	maxLabelKeyLength   = 63
	maxLabelValueLength = 63
	maxNodegroupName    = 63
)

func invalidParameter(format string, args ...any) *apiError {
	return newError(http.StatusBadRequest, "InvalidParameterException", format, args...)
}

// amiArchitecture is the EC2 architecture an AMI type runs on.
func amiArchitecture(amiType string) string {
	if strings.Contains(amiType, "ARM_64") {
		return ec2catalog.ArchitectureARM64
	}
	return ec2catalog.ArchitectureX86_64
}

// validateCreate checks a CreateNodegroup request as EKS does before it
// accepts it; subnets are checked by the caller, which knows them.
func validateCreate(req *createNodegroupRequest) *apiError {
	if req.NodegroupName == "" || len(req.NodegroupName) > maxNodegroupName || !nodegroupNamePattern.MatchString(req.NodegroupName) {
		return invalidParameter("Nodegroup name %q is invalid: it must be 1 to 63 characters, start with a letter or digit, and contain only letters, digits, hyphens and underscores.", req.NodegroupName)
	}
	if req.NodeRole == "" {
		return invalidParameter("nodeRole is required.")
	}
	if !roleARNPattern.MatchString(req.NodeRole) {
		return invalidParameter("The provided role ARN %s is not valid.", req.NodeRole)
	}
	if len(req.Subnets) == 0 {
		return invalidParameter("Subnets are required.")
	}
	if req.AmiType == "" {
		req.AmiType = "AL2023_x86_64_STANDARD"
	}
	if !slices.Contains(amiTypes, req.AmiType) {
		return invalidParameter("Invalid AMI type %q. Valid values are: %s.", req.AmiType, strings.Join(amiTypes, ", "))
	}
	if req.CapacityType == "" {
		req.CapacityType = "ON_DEMAND"
	}
	if !slices.Contains(capacityTypes, req.CapacityType) {
		return invalidParameter("Invalid capacity type %q. Valid values are: %s.", req.CapacityType, strings.Join(capacityTypes, ", "))
	}
	if req.AmiType == "CUSTOM" && req.LaunchTemplate == nil {
		return invalidParameter("A launch template is required when amiType is CUSTOM.")
	}
	if req.LaunchTemplate != nil {
		if err := validateLaunchTemplate(req.LaunchTemplate); err != nil {
			return err
		}
		if req.DiskSize != nil {
			return invalidParameter("Disk size must be specified within the launch template.")
		}
		if req.RemoteAccess != nil {
			return invalidParameter("Remote access configuration cannot be specified with a launch template.")
		}
	}
	if req.DiskSize != nil && *req.DiskSize < 1 {
		return invalidParameter("diskSize must be at least 1 GiB, not %d.", *req.DiskSize)
	}
	if len(req.InstanceTypes) == 0 {
		// CreateNodegroup: without instanceTypes, t3.medium is the default
		// (a launch template's own type is not modeled).
		req.InstanceTypes = []string{defaultInstanceType}
	}
	for _, name := range req.InstanceTypes {
		it, ok := ec2catalog.Lookup(name)
		if !ok {
			return invalidParameter("Instance type %s is not supported.", name)
		}
		if req.AmiType != "CUSTOM" && amiArchitecture(req.AmiType) != it.Architecture {
			return invalidParameter("[%s] is not a valid instance type for requested amiType %s", name, req.AmiType)
		}
	}
	if req.ScalingConfig == nil {
		one, two := int32(1), int32(2)
		req.ScalingConfig = &scalingConfig{MinSize: &one, MaxSize: &two, DesiredSize: &two}
	}
	if err := validateScaling(*req.ScalingConfig); err != nil {
		return err
	}
	if err := validateLabels(req.Labels); err != nil {
		return err
	}
	if err := validateTaints(req.Taints); err != nil {
		return err
	}
	if req.UpdateConfig != nil {
		if err := validateUpdateConfig(*mergeUpdateConfig(defaultUpdateConfig(), req.UpdateConfig)); err != nil {
			return err
		}
	}
	if err := validateNodeRepair(req.NodeRepairConfig); err != nil {
		return err
	}
	if req.Version != "" && req.Version != ClusterVersion() {
		return invalidParameter("Requested Nodegroup version %s is invalid: a node group's version must match its cluster's (%s).", req.Version, ClusterVersion())
	}
	return nil
}

// defaultUpdateConfig is EKS's update config for a group created without
// one: one node at a time.
func defaultUpdateConfig() *nodegroupUpdateConfig {
	one := int32(1)
	return &nodegroupUpdateConfig{MaxUnavailable: &one}
}

func validateLaunchTemplate(lt *launchTemplateSpec) *apiError {
	if (lt.ID == "") == (lt.Name == "") {
		return invalidParameter("Either launch template ID or launch template name must be specified, but not both.")
	}
	return nil
}

// validateScaling: minSize >= 0, maxSize >= 1, min <= max, desired in [min, max].
func validateScaling(s scalingConfig) *apiError {
	if s.MinSize == nil || s.MaxSize == nil || s.DesiredSize == nil {
		return invalidParameter("scalingConfig requires minSize, maxSize and desiredSize.")
	}
	minSize, maxSize, desired := *s.MinSize, *s.MaxSize, *s.DesiredSize
	switch {
	case minSize < 0:
		return invalidParameter("Minimum capacity %d can't be less than 0.", minSize)
	case maxSize < 1:
		return invalidParameter("Maximum capacity %d can't be less than 1.", maxSize)
	case minSize > maxSize:
		return invalidParameter("Minimum capacity %d can't be greater than maximum capacity %d.", minSize, maxSize)
	case desired < minSize:
		return invalidParameter("Desired capacity %d can't be less than minimum capacity %d.", desired, minSize)
	case desired > maxSize:
		return invalidParameter("Desired capacity %d can't be greater than maximum capacity %d.", desired, maxSize)
	}
	return nil
}

func validateLabels(labels map[string]string) *apiError {
	for key, value := range labels {
		if len(key) < 1 || len(key) > maxLabelKeyLength {
			return invalidParameter("Label key %q must be 1 to %d characters.", key, maxLabelKeyLength)
		}
		if len(value) < 1 || len(value) > maxLabelValueLength {
			return invalidParameter("Label value %q of key %q must be 1 to %d characters.", value, key, maxLabelValueLength)
		}
	}
	return nil
}

func validateTaints(taints []eksTaint) *apiError {
	if len(taints) > maxTaints {
		return invalidParameter("A node group can have at most %d taints, not %d.", maxTaints, len(taints))
	}
	for _, t := range taints {
		if t.Key == "" || len(t.Key) > maxLabelKeyLength {
			return invalidParameter("Taint key %q must be 1 to %d characters.", t.Key, maxLabelKeyLength)
		}
		if !validTaintKey(t.Key) {
			return invalidParameter("Taint key %q is invalid: it must begin with a letter or number and contain only letters, numbers, hyphens (-), periods (.) and underscores (_), optionally after a DNS subdomain prefix and a single /.", t.Key)
		}
		if len(t.Value) > maxLabelValueLength {
			return invalidParameter("Taint value %q of key %q must be at most %d characters.", t.Value, t.Key, maxLabelValueLength)
		}
		if t.Value != "" && !taintNamePattern.MatchString(t.Value) {
			return invalidParameter("Taint value %q of key %q is invalid: it must begin with a letter or number and contain only letters, numbers, hyphens (-), periods (.) and underscores (_).", t.Value, t.Key)
		}
		if !slices.Contains(taintEffects, t.Effect) {
			return invalidParameter("Invalid taint effect %q for key %q. Valid values are: %s.", t.Effect, t.Key, strings.Join(taintEffects, ", "))
		}
	}
	return nil
}

// validateUpdateConfig: exactly one of maxUnavailable (1..100) and
// maxUnavailablePercentage (1..100), and a known updateStrategy.
func validateUpdateConfig(u nodegroupUpdateConfig) *apiError {
	if err := validateUpdateStrategy(u.UpdateStrategy); err != nil {
		return err
	}
	if (u.MaxUnavailable == nil) == (u.MaxUnavailablePercentage == nil) {
		return invalidParameter("Only one of maxUnavailable or maxUnavailablePercentage must be specified in updateConfig.")
	}
	if u.MaxUnavailable != nil && (*u.MaxUnavailable < 1 || *u.MaxUnavailable > 100) {
		return invalidParameter("maxUnavailable must be between 1 and 100, not %d.", *u.MaxUnavailable)
	}
	if u.MaxUnavailablePercentage != nil && (*u.MaxUnavailablePercentage < 1 || *u.MaxUnavailablePercentage > 100) {
		return invalidParameter("maxUnavailablePercentage must be between 1 and 100, not %d.", *u.MaxUnavailablePercentage)
	}
	return nil
}
