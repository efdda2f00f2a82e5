package eks

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
)

// SyncAutoScalingGroupTags makes each Auto Scaling group carry want
// (CreateOrUpdateTags, not propagated to instances) and deletes the keys of
// prior that want no longer has (DeleteTags). Tags outside prior and want
// (EKS's own, the user's) are left alone.
func (c *Client) SyncAutoScalingGroupTags(ctx context.Context, asgNames []string, prior, want map[string]string) error {
	var stale []string
	for _, k := range slices.Sorted(maps.Keys(prior)) {
		if _, ok := want[k]; !ok {
			stale = append(stale, k)
		}
	}
	for _, asg := range asgNames {
		if len(want) > 0 {
			tags := make([]asgtypes.Tag, 0, len(want))
			for _, k := range slices.Sorted(maps.Keys(want)) {
				tags = append(tags, asgTag(asg, k, want[k]))
			}
			if _, err := c.asg.CreateOrUpdateTags(ctx, &autoscaling.CreateOrUpdateTagsInput{Tags: tags}); err != nil {
				return fmt.Errorf("tagging Auto Scaling group %s: %w", asg, err)
			}
		}
		if len(stale) > 0 {
			tags := make([]asgtypes.Tag, 0, len(stale))
			for _, k := range stale {
				tags = append(tags, asgTag(asg, k, prior[k]))
			}
			if _, err := c.asg.DeleteTags(ctx, &autoscaling.DeleteTagsInput{Tags: tags}); err != nil {
				return fmt.Errorf("removing tags %v from Auto Scaling group %s: %w", stale, asg, err)
			}
		}
	}
	return nil
}

func asgTag(asg, key, value string) asgtypes.Tag {
	return asgtypes.Tag{
		ResourceId:        aws.String(asg),
		ResourceType:      aws.String("auto-scaling-group"),
		Key:               aws.String(key),
		Value:             aws.String(value),
		PropagateAtLaunch: aws.Bool(false),
	}
}

// AutoScalingGroupTags returns the tags of one Auto Scaling group (DescribeTags).
func (c *Client) AutoScalingGroupTags(ctx context.Context, asgName string) (map[string]string, error) {
	tags := map[string]string{}
	p := autoscaling.NewDescribeTagsPaginator(c.asg, &autoscaling.DescribeTagsInput{
		Filters: []asgtypes.Filter{{Name: aws.String("auto-scaling-group"), Values: []string{asgName}}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing the tags of Auto Scaling group %s: %w", asgName, err)
		}
		for _, t := range page.Tags {
			tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
	}
	return tags, nil
}

// ReadNodeTemplateTags returns the cluster-autoscaler node-template tags
// that every one of the Auto Scaling groups carries with the same value.
func (c *Client) ReadNodeTemplateTags(ctx context.Context, asgNames []string) (map[string]string, error) {
	groups := make([]map[string]string, 0, len(asgNames))
	for _, asg := range asgNames {
		tags, err := c.AutoScalingGroupTags(ctx, asg)
		if err != nil {
			return nil, err
		}
		groups = append(groups, tags)
	}
	return commonNodeTemplateTags(groups), nil
}
