package eks

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/gpuinfra/terraform-provider-gpu/internal/poll"
)

// UpdateNodeGroup brings a node group from prior to planned in place: first
// UpdateNodegroupVersion (version, release version, launch template version,
// force), then UpdateNodegroupConfig (labels and taints as additions and
// removals, scaling, update config and strategy, node repair config), each waited through DescribeUpdate
// until Successful, then TagResource / UntagResource for the tags. An update
// that fails or is canceled gives *UpdateFailedError. Nothing is called for
// a part where prior and planned agree. It returns the group as EKS reports
// it afterwards.
func (c *Client) UpdateNodeGroup(ctx context.Context, prior, planned NodeGroupSpec) (NodeGroup, error) {
	cluster, name := planned.ClusterName, planned.Name
	if in := updateVersionInput(prior, planned); in != nil {
		out, err := c.eks.UpdateNodegroupVersion(ctx, in)
		if err != nil {
			return NodeGroup{}, fmt.Errorf("updating the version of EKS node group (%s:%s): %w", cluster, name, err)
		}
		if err := c.waitUpdate(ctx, cluster, name, out.Update); err != nil {
			return NodeGroup{}, err
		}
	}
	if in := updateConfigInput(prior, planned); in != nil {
		out, err := c.eks.UpdateNodegroupConfig(ctx, in)
		if err != nil {
			return NodeGroup{}, fmt.Errorf("updating the configuration of EKS node group (%s:%s): %w", cluster, name, err)
		}
		if err := c.waitUpdate(ctx, cluster, name, out.Update); err != nil {
			return NodeGroup{}, err
		}
	}
	g, found, err := c.ReadNodeGroup(ctx, cluster, name)
	if err != nil {
		return NodeGroup{}, err
	}
	if !found {
		return NodeGroup{}, &NodeGroupGoneError{ClusterName: cluster, Name: name, While: "being updated"}
	}
	if !maps.Equal(prior.Tags, planned.Tags) {
		if err := c.updateTags(ctx, g.ARN, prior.Tags, planned.Tags); err != nil {
			return NodeGroup{}, fmt.Errorf("tagging EKS node group (%s:%s): %w", cluster, name, err)
		}
		g.Tags = planned.Tags
	}
	return g, nil
}

// updateVersionInput is the UpdateNodegroupVersion call that takes prior to
// planned, or nil when their version fields agree. Version and release
// version are sent only when planned sets them (empty: EKS picks, as at create).
func updateVersionInput(prior, planned NodeGroupSpec) *awseks.UpdateNodegroupVersionInput {
	versionChanged := planned.Version != "" && planned.Version != prior.Version
	releaseChanged := planned.ReleaseVersion != "" && planned.ReleaseVersion != prior.ReleaseVersion
	ltChanged := planned.LaunchTemplate != nil && (prior.LaunchTemplate == nil || *planned.LaunchTemplate != *prior.LaunchTemplate)
	if !versionChanged && !releaseChanged && !ltChanged {
		return nil
	}
	in := &awseks.UpdateNodegroupVersionInput{
		ClusterName:   aws.String(planned.ClusterName),
		NodegroupName: aws.String(planned.Name),
		Force:         planned.ForceUpdateVersion,
	}
	if versionChanged {
		in.Version = aws.String(planned.Version)
	}
	if releaseChanged {
		in.ReleaseVersion = aws.String(planned.ReleaseVersion)
	}
	if ltChanged {
		in.LaunchTemplate = launchTemplateToEKS(planned.LaunchTemplate)
	}
	return in
}

// updateConfigInput is the UpdateNodegroupConfig call that takes prior to
// planned, or nil when their labels, taints, scaling, update config and node
// repair config agree. A nil planned update or repair config is not sent
// (EKS keeps what it has).
func updateConfigInput(prior, planned NodeGroupSpec) *awseks.UpdateNodegroupConfigInput {
	in := &awseks.UpdateNodegroupConfigInput{
		ClusterName:   aws.String(planned.ClusterName),
		NodegroupName: aws.String(planned.Name),
		Labels:        diffLabels(prior.Labels, planned.Labels),
		Taints:        diffTaints(prior.Taints, planned.Taints),
	}
	if prior.Scaling != planned.Scaling {
		in.ScalingConfig = &ekstypes.NodegroupScalingConfig{
			MinSize:     aws.Int32(planned.Scaling.Min),
			MaxSize:     aws.Int32(planned.Scaling.Max),
			DesiredSize: aws.Int32(planned.Scaling.Desired),
		}
	}
	if planned.UpdateConfig != nil && (prior.UpdateConfig == nil || *prior.UpdateConfig != *planned.UpdateConfig) {
		in.UpdateConfig = updateConfigToEKS(planned.UpdateConfig)
	}
	if planned.NodeRepair != nil && !planned.NodeRepair.Equal(prior.NodeRepair) {
		in.NodeRepairConfig = nodeRepairToEKS(planned.NodeRepair)
	}
	if in.Labels == nil && in.Taints == nil && in.ScalingConfig == nil && in.UpdateConfig == nil && in.NodeRepairConfig == nil {
		return nil
	}
	return in
}

// diffLabels is the labels payload that turns prior into planned: keys that
// are new or changed to add or update, keys that are gone to remove; nil when
// nothing differs.
func diffLabels(prior, planned map[string]string) *ekstypes.UpdateLabelsPayload {
	p := &ekstypes.UpdateLabelsPayload{}
	for k, v := range planned {
		if old, ok := prior[k]; !ok || old != v {
			if p.AddOrUpdateLabels == nil {
				p.AddOrUpdateLabels = map[string]string{}
			}
			p.AddOrUpdateLabels[k] = v
		}
	}
	for _, k := range slices.Sorted(maps.Keys(prior)) {
		if _, ok := planned[k]; !ok {
			p.RemoveLabels = append(p.RemoveLabels, k)
		}
	}
	if p.AddOrUpdateLabels == nil && p.RemoveLabels == nil {
		return nil
	}
	return p
}

// diffTaints is the taints payload that turns prior into planned. A taint is
// identified by key and effect (as in Kubernetes): one whose value changed is
// added or updated; one whose key and effect are gone is removed. nil when
// nothing differs.
func diffTaints(prior, planned []Taint) *ekstypes.UpdateTaintsPayload {
	type id struct{ key, effect string }
	priorValues := map[id]string{}
	for _, t := range prior {
		priorValues[id{t.Key, t.Effect}] = t.Value
	}
	plannedIDs := map[id]bool{}
	p := &ekstypes.UpdateTaintsPayload{}
	for _, t := range planned {
		plannedIDs[id{t.Key, t.Effect}] = true
		if v, ok := priorValues[id{t.Key, t.Effect}]; !ok || v != t.Value {
			p.AddOrUpdateTaints = append(p.AddOrUpdateTaints, taintsToEKS([]Taint{t})...)
		}
	}
	for _, t := range prior {
		if !plannedIDs[id{t.Key, t.Effect}] {
			p.RemoveTaints = append(p.RemoveTaints, taintsToEKS([]Taint{t})...)
		}
	}
	if p.AddOrUpdateTaints == nil && p.RemoveTaints == nil {
		return nil
	}
	return p
}

// waitUpdate polls DescribeUpdate until the update is Successful, or returns
// *UpdateFailedError when it fails or is canceled.
func (c *Client) waitUpdate(ctx context.Context, cluster, name string, u *ekstypes.Update) error {
	if u == nil || u.Id == nil {
		return fmt.Errorf("EKS accepted an update of node group (%s:%s) but returned no update ID", cluster, name)
	}
	id, kind := aws.ToString(u.Id), string(u.Type)
	check := func(u *ekstypes.Update) (bool, error) {
		switch u.Status {
		case ekstypes.UpdateStatusSuccessful:
			return true, nil
		case ekstypes.UpdateStatusFailed, ekstypes.UpdateStatusCancelled:
			e := &UpdateFailedError{ClusterName: cluster, Name: name, UpdateID: id, Type: kind, Status: string(u.Status)}
			for _, d := range u.Errors {
				e.Errors = append(e.Errors, Issue{Code: string(d.ErrorCode), Message: aws.ToString(d.ErrorMessage), ResourceIDs: d.ResourceIds})
			}
			return false, e
		}
		return false, nil
	}
	if done, err := check(u); done || err != nil {
		return err
	}
	return poll.Until(ctx, waitLog, fmt.Sprintf("EKS %s %s of node group (%s:%s) to succeed", kind, id, cluster, name), checkAfterRequest,
		func(ctx context.Context) (bool, error) {
			out, err := c.eks.DescribeUpdate(ctx, &awseks.DescribeUpdateInput{
				Name:          aws.String(cluster),
				NodegroupName: aws.String(name),
				UpdateId:      aws.String(id),
			})
			if err != nil {
				return false, fmt.Errorf("describing EKS update %s of node group (%s:%s): %w", id, cluster, name, err)
			}
			if out.Update == nil {
				return false, fmt.Errorf("EKS described update %s of node group (%s:%s) as nothing", id, cluster, name)
			}
			return check(out.Update)
		})
}

// updateTags makes the tags of the resource with this ARN go from prior to
// planned: TagResource for new or changed keys, UntagResource for removed ones.
func (c *Client) updateTags(ctx context.Context, arn string, prior, planned map[string]string) error {
	add := map[string]string{}
	for k, v := range planned {
		if old, ok := prior[k]; !ok || old != v {
			add[k] = v
		}
	}
	var remove []string
	for _, k := range slices.Sorted(maps.Keys(prior)) {
		if _, ok := planned[k]; !ok {
			remove = append(remove, k)
		}
	}
	if len(remove) > 0 {
		if _, err := c.eks.UntagResource(ctx, &awseks.UntagResourceInput{ResourceArn: aws.String(arn), TagKeys: remove}); err != nil {
			return fmt.Errorf("removing tags %v from %s: %w", remove, arn, err)
		}
	}
	if len(add) > 0 {
		if _, err := c.eks.TagResource(ctx, &awseks.TagResourceInput{ResourceArn: aws.String(arn), Tags: add}); err != nil {
			return fmt.Errorf("tagging %s: %w", arn, err)
		}
	}
	return nil
}
