package eks

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// PrepareCapacityLaunchTemplate makes the launch template version that puts
// spec's instances into spec.CapacityReservation, and returns spec as EKS
// must then get it: LaunchTemplate naming that version, DiskSize moved into
// the template, and, for a Capacity Block, no InstanceTypes (the template
// holds the type; EKS refuses both). A spec without a CapacityReservation
// comes back unchanged.
//
// With spec.LaunchTemplate (the user's template) it creates a new version of
// it from that version (CreateLaunchTemplateVersion with SourceVersion), so
// the user's settings stay and only the targeting is added; the user's
// template is never deleted. Without, it uses the template the provider owns
// for the group (OwnedLaunchTemplateName, tagged OwnedLaunchTemplateTag):
// found by name and adopted when an earlier apply left it, a new version
// only when its latest one targets something else, created otherwise.
func (c *Client) PrepareCapacityLaunchTemplate(ctx context.Context, spec NodeGroupSpec) (NodeGroupSpec, error) {
	t := spec.CapacityReservation
	if t == nil {
		return spec, nil
	}
	data := capacityTemplateData(*t, spec.DiskSize, spec.AMIType)
	var lt LaunchTemplate
	var err error
	if spec.LaunchTemplate != nil {
		lt, err = c.userTemplateVersion(ctx, *spec.LaunchTemplate, data)
	} else {
		lt, err = c.ensureOwnedTemplate(ctx, spec, data)
	}
	if err != nil {
		return spec, err
	}
	return spec.WithCapacityLaunchTemplate(lt), nil
}

// WithCapacityLaunchTemplate is spec (which has a CapacityReservation) as
// EKS must get it with lt, the version that targets the reservation: the
// disk size moves into the template (EKS refuses diskSize next to a launch
// template), and a block's instance type is the template's (EKS refuses
// instanceTypes when the template has one).
func (spec NodeGroupSpec) WithCapacityLaunchTemplate(lt LaunchTemplate) NodeGroupSpec {
	spec.LaunchTemplate = &lt
	spec.DiskSize = 0
	if spec.CapacityReservation != nil && spec.CapacityReservation.Block {
		spec.InstanceTypes = nil
	}
	return spec
}

// userTemplateVersion creates a version of the user's template from the
// version the user named, with data's capacity fields added.
func (c *Client) userTemplateVersion(ctx context.Context, user LaunchTemplate, data *ec2types.RequestLaunchTemplateData) (LaunchTemplate, error) {
	in := &ec2.CreateLaunchTemplateVersionInput{
		LaunchTemplateData: data,
		SourceVersion:      optionalString(user.Version),
		VersionDescription: aws.String("capacity reservation targeting added by terraform-provider-gpu"),
	}
	what := user.ID
	if user.ID != "" {
		in.LaunchTemplateId = aws.String(user.ID)
	} else {
		in.LaunchTemplateName = aws.String(user.Name)
		what = user.Name
	}
	out, err := c.ec2.CreateLaunchTemplateVersion(ctx, in)
	if err != nil {
		return LaunchTemplate{}, fmt.Errorf("adding the capacity reservation to launch template %s (a new version from version %s): %w", what, user.Version, err)
	}
	v := out.LaunchTemplateVersion
	if v == nil {
		return LaunchTemplate{}, fmt.Errorf("EC2 created a version of launch template %s but described none", what)
	}
	return LaunchTemplate{ID: aws.ToString(v.LaunchTemplateId), Name: aws.ToString(v.LaunchTemplateName), Version: versionString(v.VersionNumber)}, nil
}

// ensureOwnedTemplate finds or creates the group's own template and returns
// the version that holds data.
func (c *Client) ensureOwnedTemplate(ctx context.Context, spec NodeGroupSpec, data *ec2types.RequestLaunchTemplateData) (LaunchTemplate, error) {
	name := OwnedLaunchTemplateName(spec.ClusterName, spec.Name)
	found, ok, err := c.ownedTemplate(ctx, spec.ClusterName, spec.Name)
	if err != nil {
		return LaunchTemplate{}, err
	}
	if !ok {
		out, err := c.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String(name),
			LaunchTemplateData: data,
			VersionDescription: aws.String("capacity reservation targeting for EKS node group " + spec.ClusterName + ":" + spec.Name),
			TagSpecifications: []ec2types.TagSpecification{{
				ResourceType: ec2types.ResourceTypeLaunchTemplate,
				Tags:         []ec2types.Tag{{Key: aws.String(OwnedLaunchTemplateTag), Value: aws.String(ownedTagValue(spec.ClusterName, spec.Name))}},
			}},
		})
		if err != nil {
			return LaunchTemplate{}, fmt.Errorf("creating launch template %s for EKS node group (%s:%s): %w", name, spec.ClusterName, spec.Name, err)
		}
		lt := out.LaunchTemplate
		if lt == nil {
			return LaunchTemplate{}, fmt.Errorf("EC2 created launch template %s but described nothing", name)
		}
		return LaunchTemplate{ID: aws.ToString(lt.LaunchTemplateId), Name: name, Version: versionString(lt.LatestVersionNumber)}, nil
	}
	latest, err := c.templateVersionTarget(ctx, found.ID, "$Latest")
	if err != nil {
		return LaunchTemplate{}, err
	}
	if sameTarget(latest.target, *spec.CapacityReservation, spec.DiskSize) {
		found.Version = latest.version
		return found, nil
	}
	out, err := c.ec2.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{
		LaunchTemplateId:   aws.String(found.ID),
		LaunchTemplateData: data,
	})
	if err != nil {
		return LaunchTemplate{}, fmt.Errorf("creating a version of launch template %s (%s): %w", name, found.ID, err)
	}
	if out.LaunchTemplateVersion == nil {
		return LaunchTemplate{}, fmt.Errorf("EC2 created a version of launch template %s but described none", name)
	}
	found.Version = versionString(out.LaunchTemplateVersion.VersionNumber)
	return found, nil
}

// ownedTemplate finds the group's own template by name (a name filter: EC2
// answers an empty list, not an error, when there is none). A template of
// that name without the provider's tag for this group is an error: it is
// someone else's, and is neither used nor deleted.
func (c *Client) ownedTemplate(ctx context.Context, cluster, nodeGroup string) (LaunchTemplate, bool, error) {
	name := OwnedLaunchTemplateName(cluster, nodeGroup)
	out, err := c.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{
		Filters: []ec2types.Filter{{Name: aws.String("launch-template-name"), Values: []string{name}}},
	})
	if err != nil {
		return LaunchTemplate{}, false, fmt.Errorf("describing launch template %s: %w", name, err)
	}
	for _, lt := range out.LaunchTemplates {
		if aws.ToString(lt.LaunchTemplateName) != name {
			continue
		}
		if !hasTag(lt.Tags, OwnedLaunchTemplateTag, ownedTagValue(cluster, nodeGroup)) {
			return LaunchTemplate{}, false, &ForeignLaunchTemplateError{Name: name, ID: aws.ToString(lt.LaunchTemplateId), Tag: OwnedLaunchTemplateTag + "=" + ownedTagValue(cluster, nodeGroup)}
		}
		return LaunchTemplate{ID: aws.ToString(lt.LaunchTemplateId), Name: name, Version: versionString(lt.LatestVersionNumber)}, true, nil
	}
	return LaunchTemplate{}, false, nil
}

func hasTag(tags []ec2types.Tag, key, value string) bool {
	for _, t := range tags {
		if aws.ToString(t.Key) == key && aws.ToString(t.Value) == value {
			return true
		}
	}
	return false
}

type templateVersion struct {
	name, version string
	target        LaunchTemplateTarget
}

// templateVersionTarget reads one version of a template (a number,
// "$Latest" or "$Default").
func (c *Client) templateVersionTarget(ctx context.Context, id, version string) (templateVersion, error) {
	out, err := c.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{
		LaunchTemplateId: aws.String(id),
		Versions:         []string{version},
	})
	if err != nil {
		return templateVersion{}, fmt.Errorf("describing version %s of launch template %s: %w", version, id, err)
	}
	if len(out.LaunchTemplateVersions) == 0 {
		return templateVersion{}, fmt.Errorf("describing version %s of launch template %s: EC2 described no version", version, id)
	}
	v := out.LaunchTemplateVersions[0]
	return templateVersion{
		name:    aws.ToString(v.LaunchTemplateName),
		version: versionString(v.VersionNumber),
		target:  targetFromTemplateData(v.LaunchTemplateData),
	}, nil
}

// OwnedLaunchTemplate is what ReadLaunchTemplateTarget found.
type OwnedLaunchTemplate struct {
	LaunchTemplate
	Target LaunchTemplateTarget
	// Owned: the template is the one the provider creates for the group
	// (its name and tag), not a user's.
	Owned bool
}

// ReadLaunchTemplateTarget reads the capacity targeting of the group's
// launch template version lt (as DescribeNodegroup names it), and whether
// the provider owns that template.
func (c *Client) ReadLaunchTemplateTarget(ctx context.Context, cluster, nodeGroup string, lt LaunchTemplate) (OwnedLaunchTemplate, error) {
	v, err := c.templateVersionTarget(ctx, lt.ID, lt.Version)
	if err != nil {
		return OwnedLaunchTemplate{}, err
	}
	out := OwnedLaunchTemplate{LaunchTemplate: LaunchTemplate{ID: lt.ID, Name: v.name, Version: v.version}, Target: v.target}
	if v.name == OwnedLaunchTemplateName(cluster, nodeGroup) {
		owned, ok, err := c.ownedTemplate(ctx, cluster, nodeGroup)
		var foreign *ForeignLaunchTemplateError
		switch {
		case errors.As(err, &foreign):
		case err != nil:
			return OwnedLaunchTemplate{}, err
		default:
			out.Owned = ok && owned.ID == lt.ID
		}
	}
	return out, nil
}

// DeleteOwnedLaunchTemplate deletes the template the provider owns for the
// group, if there is one; a template of that name without the provider's
// tag is left alone, as is any user's template.
func (c *Client) DeleteOwnedLaunchTemplate(ctx context.Context, cluster, nodeGroup string) error {
	lt, ok, err := c.ownedTemplate(ctx, cluster, nodeGroup)
	var foreign *ForeignLaunchTemplateError
	if errors.As(err, &foreign) {
		return nil
	}
	if err != nil || !ok {
		return err
	}
	if _, err := c.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(lt.ID)}); err != nil {
		return fmt.Errorf("deleting launch template %s (%s) of EKS node group (%s:%s): %w", lt.Name, lt.ID, cluster, nodeGroup, err)
	}
	return nil
}

// ForeignLaunchTemplateError says a launch template has the name the
// provider gives its own template for a group, but not its tag.
type ForeignLaunchTemplateError struct{ Name, ID, Tag string }

func (e *ForeignLaunchTemplateError) Error() string {
	return fmt.Sprintf("launch template %s (%s) exists without the tag %s: it was not created by this provider for this node group, "+
		"so it is neither used nor deleted; rename or delete it, or name it in the group's launch template", e.Name, e.ID, e.Tag)
}
