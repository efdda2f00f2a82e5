package eks

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"
)

// Issue is one problem EKS reports: a node group's health issue
// (DescribeNodegroup) or one of an update's errors (DescribeUpdate).
type Issue struct {
	Code, Message string
	ResourceIDs   []string
}

// writeIssues lists issues, one a line, after a colon; none says so.
func writeIssues(b *strings.Builder, issues []Issue, none string) {
	if len(issues) == 0 {
		b.WriteString(" (" + none + ")")
		return
	}
	b.WriteString(":")
	for _, i := range issues {
		fmt.Fprintf(b, "\n  - %s: %s", i.Code, i.Message)
		if len(i.ResourceIDs) > 0 {
			fmt.Fprintf(b, " (resources: %s)", strings.Join(i.ResourceIDs, ", "))
		}
	}
}

// NodeGroupFailedError says EKS gave up on a node group (CREATE_FAILED,
// DELETE_FAILED or DEGRADED), with every health issue it reported.
type NodeGroupFailedError struct {
	ClusterName, Name string
	Status            string
	Health            []Issue
}

func (e *NodeGroupFailedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "EKS node group %q of cluster %q is %s", e.Name, e.ClusterName, e.Status)
	writeIssues(&b, e.Health, "EKS reported no health issue")
	return b.String()
}

// UpdateFailedError says a node group update failed or was canceled.
type UpdateFailedError struct {
	ClusterName, Name string
	UpdateID          string
	Type              string // EKS update type, e.g. "VersionUpdate", "ConfigUpdate"
	Status            string // EKS's UpdateStatus: UpdateStatusFailed or UpdateStatusCancelled
	Errors            []Issue
}

func (e *UpdateFailedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "EKS %s %s of node group %q (cluster %q) ended %s", e.Type, e.UpdateID, e.Name, e.ClusterName, e.Status)
	writeIssues(&b, e.Errors, "EKS reported no error detail")
	return b.String()
}

// NodeGroupGoneError says a node group that was being created or updated
// no longer exists: something else deleted it.
type NodeGroupGoneError struct {
	ClusterName, Name string
	// While says what was going on, e.g. "waiting for it to become ACTIVE".
	While string
}

func (e *NodeGroupGoneError) Error() string {
	return fmt.Sprintf("EKS node group (%s:%s) disappeared while %s", e.ClusterName, e.Name, e.While)
}

// UnknownInstanceTypesError names instance types EC2 does not know in the region.
type UnknownInstanceTypesError struct {
	Names  []string
	Region string
}

func (e *UnknownInstanceTypesError) Error() string {
	return fmt.Sprintf("EC2 instance type(s) %s do not exist in region %s: check the spelling (e.g. \"p5.48xlarge\") and that the type is sold in this region",
		quoteAll(e.Names), e.Region)
}

// UnknownSubnetsError names subnets EC2 does not know in the region.
type UnknownSubnetsError struct {
	IDs    []string
	Region string
}

func (e *UnknownSubnetsError) Error() string {
	return fmt.Sprintf("subnet(s) %s do not exist in region %s: use subnet IDs (subnet-...) of the cluster's VPC in this region",
		quoteAll(e.IDs), e.Region)
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// apiErrorCode is the AWS error code of err ("ResourceNotFoundException",
// "InvalidInstanceType", ...), or "" when err is not an AWS API error.
func apiErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
