package awsemu

import (
	"slices"
	"strconv"
)

// How CreateNodegroup uses an EC2 launch template the emulator holds: the
// group launches from the version it names (capacity_placement.go), takes
// its instance type from it, and a CAPACITY_BLOCK group needs one that
// asks for the capacity-block market. A template EC2 does not hold is
// accepted as before (doc.go says why).

// templateOf finds the emulated template a node group's spec names. e.mu
// is held.
func (s *state) templateOf(spec *launchTemplateSpec) *launchTemplate {
	if spec == nil {
		return nil
	}
	i := slices.IndexFunc(s.launchTemplates, func(lt *launchTemplate) bool {
		return (spec.ID != "" && lt.id == spec.ID) || (spec.ID == "" && spec.Name != "" && lt.name == spec.Name)
	})
	if i < 0 {
		return nil
	}
	return s.launchTemplates[i]
}

// templateInstanceType is the instance type the named template version
// sets, "" when none (or no such template).
func (e *Emulator) templateInstanceType(spec *launchTemplateSpec) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	lt := e.st.templateOf(spec)
	if lt == nil {
		return ""
	}
	v, err := lt.version(spec.Version)
	if err != nil {
		return ""
	}
	return v.data.InstanceType
}

// checkGroupTemplate resolves the group's template into spec (ID, name,
// version number) and applies EKS's rules for it; typesInBoth says the
// request named instanceTypes while the template sets one. e.mu is held.
func (s *state) checkGroupTemplate(req *createNodegroupRequest, spec *launchTemplateSpec, typesInBoth bool) *apiError {
	lt := s.templateOf(spec)
	if lt == nil {
		if req.CapacityType == "CAPACITY_BLOCK" {
			// "Managed node groups with Capacity Blocks can only be created
			// with custom launch templates" whose InstanceMarketOptions
			// MarketType is "capacity-block" ("Create a managed node group
			// with Capacity Blocks for ML",
			// https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html).
			return invalidParameter("Capacity type CAPACITY_BLOCK requires a launch template whose InstanceMarketOptions MarketType is capacity-block and whose CapacityReservationTarget is the Capacity Block.")
		}
		return nil
	}
	v, err := lt.version(spec.Version)
	if err != nil {
		return invalidParameter("The launch template %s has no version %s.", lt.id, spec.Version)
	}
	spec.ID, spec.Name = lt.id, lt.name
	if spec.Version == "" {
		// EKS launches from the default version when none is named.
		spec.Version = strconv.Itoa(v.number)
	}
	if typesInBoth {
		return invalidParameter("Instance type can't be specified in both the launch template %s and the node group's instanceTypes.", lt.id)
	}
	if req.CapacityType == "CAPACITY_BLOCK" && (v.data.InstanceMarketOptions == nil || v.data.InstanceMarketOptions.MarketType != "capacity-block") {
		return invalidParameter("Capacity type CAPACITY_BLOCK requires launch template %s version %d to set InstanceMarketOptions MarketType capacity-block.", lt.id, v.number)
	}
	return nil
}
