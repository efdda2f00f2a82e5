package awsemu

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Where a node group's instances launch: into the capacity reservation its
// EC2 launch template targets (only in that reservation's AZ, counting
// against it), into an open On-Demand Capacity Reservation of the type in
// the AZ, or on-demand unless SetOnDemandCapacity took that away.

// asgLaunchFailures is the health issue code EKS reports when the group's
// Auto Scaling group cannot launch instances (EKS API reference, Issue
// code AsgInstanceLaunchFailures).
const asgLaunchFailures = "AsgInstanceLaunchFailures"

// blockReclaimLead is how long before a Capacity Block's end EC2 begins
// terminating its instances: "Forty minutes before your Capacity Block
// reservation ends, you receive another EventBridge event that tells you
// that any instances running in the reservation will begin to terminate in
// 10 minutes" ("Monitor Capacity Blocks using EventBridge",
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-monitor.html).
const blockReclaimLead = 30 * time.Minute

// groupTemplate is the EC2 launch template version a group launches from:
// nil when the group has none, or names one EC2 does not hold (the
// emulator accepts those, see doc.go). e.mu is held.
func (s *state) groupTemplate(ng *nodegroup) *launchTemplateVersion {
	spec := ng.doc.LaunchTemplate
	if spec == nil {
		return nil
	}
	for _, lt := range s.launchTemplates {
		if lt.id == spec.ID || (spec.ID == "" && lt.name == spec.Name) {
			v, err := lt.version(spec.Version)
			if err != nil {
				return nil
			}
			return v
		}
	}
	return nil
}

// reclaimAt is when EC2 takes a reservation's instances back: a block's
// end less the reclaim lead (Options.BlockReclaimLead), any other
// reservation's end; zero when it has none.
func (e *Emulator) reclaimAt(r *capacityReservation) time.Time {
	if r.end.IsZero() {
		return time.Time{}
	}
	if r.block && !r.ended {
		return r.end.Add(-e.opts.BlockReclaimLead)
	}
	return r.end
}

// launchable reports whether instances can run in the reservation now:
// it has started and EC2 is not reclaiming it.
func (e *Emulator) launchable(r *capacityReservation, now time.Time) bool {
	at := e.reclaimAt(r)
	return !now.Before(r.start) && (at.IsZero() || now.Before(at)) && r.stateAt(now) == reservationActive
}

// placement is where one new instance goes, or why it does not launch.
type placement struct {
	zone, reservation string
	// failure is the EC2 launch error EKS reports; empty with no zone means
	// the instance waits (a reservation that has not started).
	failure string
}

// place decides where the group's next instance launches. e.mu is held.
func (e *Emulator) place(ng *nodegroup, instanceType string, zones []string, now time.Time) placement {
	s := e.st
	tmpl := s.groupTemplate(ng)
	var spec *ltCapacitySpec
	if tmpl != nil {
		spec = tmpl.data.CapacityReservationSpecification
	}
	if spec != nil && spec.CapacityReservationTarget != nil && spec.CapacityReservationTarget.CapacityReservationID != "" {
		return e.placeTargeted(ng, instanceType, zones, spec.CapacityReservationTarget.CapacityReservationID, now)
	}
	// Resource groups are not emulated: a group that targets one may use
	// any of the account's reservations of the type, as if its resource
	// group held them all.
	anyReservation := spec != nil && spec.CapacityReservationTarget != nil && spec.CapacityReservationTarget.CapacityReservationResourceGroupArn != ""
	preference := ""
	if spec != nil {
		preference = spec.CapacityReservationPreference
	}
	start := len(ng.nodes)
	if preference != "none" {
		for i := range zones {
			zone := zones[(start+i)%len(zones)]
			for _, r := range s.reservations {
				if r.instanceType == instanceType && r.zone == zone && (r.matchCriteria == "open" || anyReservation) &&
					e.launchable(r, now) && s.reservationAvailable(r, now) > 0 {
					return placement{zone: zone, reservation: r.id}
				}
			}
		}
	}
	if preference == "capacity-reservations-only" || anyReservation {
		return placement{failure: errReservationCapacityExceeded}
	}
	for i := range zones {
		zone := zones[(start+i)%len(zones)]
		if !s.noOnDemand[instanceType+"/"+zone] {
			return placement{zone: zone}
		}
	}
	return placement{failure: insufficientCapacity(instanceType, zones)}
}

// placeTargeted places an instance into the one reservation the group's
// template targets.
func (e *Emulator) placeTargeted(ng *nodegroup, instanceType string, zones []string, id string, now time.Time) placement {
	r := e.st.reservation(id)
	switch {
	case r == nil:
		return placement{failure: fmt.Sprintf("InvalidCapacityReservationId.NotFound - The capacity reservation ID '%s' does not exist", id)}
	case !slices.Contains(zones, r.zone):
		return placement{failure: fmt.Sprintf("Your requested Capacity Reservation %s is in %s, which none of the node group's subnets (%s) is in", id, r.zone, strings.Join(ng.subnetZones(), ", "))}
	case r.instanceType != instanceType:
		return placement{failure: errReservationCapacityExceeded}
	case now.Before(r.start):
		return placement{} // waits for the block to start
	case !e.launchable(r, now):
		return placement{failure: fmt.Sprintf("The Capacity Reservation %s is %s: it ended at %s", id, r.stateAt(now), ec2Time(r.end))}
	case e.st.reservationAvailable(r, now) <= 0:
		return placement{failure: errReservationCapacityExceeded}
	}
	return placement{zone: r.zone, reservation: r.id}
}

// The EC2 launch errors as the Auto Scaling group relays them. EC2's
// message for ReservationCapacityExceeded as RunInstances gives it (quoted
// in scylladb/scylla-cluster-tests#8839); InsufficientInstanceCapacity's
// as the EC2 troubleshooting guide shows it.
const errReservationCapacityExceeded = "ReservationCapacityExceeded - The requested reservation does not have sufficient compatible and available capacity for this request."

func insufficientCapacity(instanceType string, zones []string) string {
	return fmt.Sprintf("InsufficientInstanceCapacity - We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). Our system will be working on provisioning additional capacity.",
		instanceType, strings.Join(zones, ", "))
}

// launchFailureIssue is the health issue EKS reports for a launch EC2
// refused.
func (ng *nodegroup) launchFailureIssue(failure string) healthIssue {
	market := "On-Demand"
	if ng.doc.CapacityType == "CAPACITY_BLOCK" {
		market = "Capacity Block"
	}
	return healthIssue{
		Code:        asgLaunchFailures,
		Message:     "Could not launch " + market + " Instances. " + failure + " Launching EC2 instance failed.",
		ResourceIDs: []string{ng.asgName},
	}
}

// setLaunchIssue records (or, with "", clears) the group's launch failure
// health issue, leaving other issues alone.
func (ng *nodegroup) setLaunchIssue(failure string) {
	issues := slices.DeleteFunc(slices.Clone(ng.doc.Health.Issues), func(i healthIssue) bool { return i.Code == asgLaunchFailures })
	if failure != "" {
		issues = append(issues, ng.launchFailureIssue(failure))
	}
	ng.doc.Health.Issues = issues
}
