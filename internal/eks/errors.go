package eks

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"
)

// NodeGroupFailedError says EKS gave up on a node group (CREATE_FAILED,
// DELETE_FAILED or DEGRADED), with every health issue it reported.
type NodeGroupFailedError struct {
	ClusterName, Name string
	Status            string
	Health            []HealthIssue
}

func (e *NodeGroupFailedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "EKS node group %q of cluster %q is %s", e.Name, e.ClusterName, e.Status)
	if len(e.Health) == 0 {
		b.WriteString(" (EKS reported no health issue)")
		return b.String()
	}
	b.WriteString(":")
	for _, h := range e.Health {
		fmt.Fprintf(&b, "\n  - %s: %s", h.Code, h.Message)
		if len(h.ResourceIDs) > 0 {
			fmt.Fprintf(&b, " (resources: %s)", strings.Join(h.ResourceIDs, ", "))
		}
	}
	return b.String()
}

// UpdateFailedError says a node group update failed or was canceled.
type UpdateFailedError struct {
	ClusterName, Name string
	UpdateID          string
	Type              string // EKS update type, e.g. "VersionUpdate", "ConfigUpdate"
	Status            string // EKS's UpdateStatus: UpdateStatusFailed or UpdateStatusCancelled
	Errors            []UpdateError
}

// UpdateError is one of an update's errors, as DescribeUpdate reports them.
type UpdateError struct {
	Code, Message string
	ResourceIDs   []string
}

func (e *UpdateFailedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "EKS %s %s of node group %q (cluster %q) ended %s", e.Type, e.UpdateID, e.Name, e.ClusterName, e.Status)
	if len(e.Errors) == 0 {
		b.WriteString(" (EKS reported no error detail)")
		return b.String()
	}
	b.WriteString(":")
	for _, u := range e.Errors {
		fmt.Fprintf(&b, "\n  - %s: %s", u.Code, u.Message)
		if len(u.ResourceIDs) > 0 {
			fmt.Fprintf(&b, " (resources: %s)", strings.Join(u.ResourceIDs, ", "))
		}
	}
	return b.String()
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
