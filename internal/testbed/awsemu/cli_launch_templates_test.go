package awsemu

import (
	"encoding/json"
	"strings"
	"testing"
)

type cliLaunchTemplate struct {
	LaunchTemplateID     string `json:"LaunchTemplateId"`
	LaunchTemplateName   string
	DefaultVersionNumber int
	LatestVersionNumber  int
	Tags                 []struct{ Key, Value string }
}

type cliLaunchTemplateVersion struct {
	LaunchTemplateID   string `json:"LaunchTemplateId"`
	VersionNumber      int
	DefaultVersion     bool
	LaunchTemplateData struct {
		CapacityReservationSpecification *struct {
			CapacityReservationPreference string
			CapacityReservationTarget     *struct {
				CapacityReservationID               string `json:"CapacityReservationId"`
				CapacityReservationResourceGroupArn string
			}
		}
		InstanceMarketOptions *struct{ MarketType string }
		BlockDeviceMappings   []struct {
			DeviceName string
			Ebs        struct {
				VolumeSize int
				VolumeType string
			}
		}
		TagSpecifications []struct {
			ResourceType string
			Tags         []struct{ Key, Value string }
		}
	}
}

func ltData(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func deleteLaunchTemplateAtEnd(t *testing.T, name string) {
	t.Cleanup(func() {
		e := emu
		e.mu.Lock()
		defer e.mu.Unlock()
		for i, lt := range e.st.launchTemplates {
			if lt.name == name {
				e.st.launchTemplates = append(e.st.launchTemplates[:i], e.st.launchTemplates[i+1:]...)
				return
			}
		}
	})
}

func TestAWSCLILaunchTemplates(t *testing.T) {
	requireTestbed(t)
	block := addReservation(t, CapacityReservationSeed{InstanceType: "p5.48xlarge", AvailabilityZone: emu.Region() + "a", Count: 2, Block: true,
		End: timeIn(48)})
	const name = "gpu-block-lt"
	deleteLaunchTemplateAtEnd(t, name)
	data := map[string]any{
		"InstanceType":          "p5.48xlarge",
		"UserData":              "IyEvYmluL2Jhc2gK",
		"InstanceMarketOptions": map[string]any{"MarketType": "capacity-block"},
		"CapacityReservationSpecification": map[string]any{
			"CapacityReservationTarget": map[string]any{"CapacityReservationId": block},
		},
		"BlockDeviceMappings": []any{map[string]any{"DeviceName": "/dev/xvda", "Ebs": map[string]any{"VolumeSize": 200, "VolumeType": "gp3"}}},
		"TagSpecifications":   []any{map[string]any{"ResourceType": "instance", "Tags": []any{map[string]any{"Key": "team", "Value": "ml"}}}},
	}
	var created struct{ LaunchTemplate cliLaunchTemplate }
	awsCLI(t, &created, "ec2", "create-launch-template", "--launch-template-name", name, "--launch-template-data", ltData(t, data),
		"--tag-specifications", "ResourceType=launch-template,Tags=[{Key=owner,Value=gpu}]")
	lt := created.LaunchTemplate
	if !strings.HasPrefix(lt.LaunchTemplateID, "lt-") || lt.LaunchTemplateName != name || lt.DefaultVersionNumber != 1 || lt.LatestVersionNumber != 1 ||
		len(lt.Tags) != 1 || lt.Tags[0].Key != "owner" {
		t.Fatalf("create-launch-template: %+v", lt)
	}
	awsCLIFails(t, "InvalidLaunchTemplateName.AlreadyExistsException", "ec2", "create-launch-template", "--launch-template-name", name, "--launch-template-data", `{"InstanceType":"g6.xlarge"}`)
	awsCLIFails(t, "InvalidLaunchTemplateName.MalformedException", "ec2", "create-launch-template", "--launch-template-name", "a b", "--launch-template-data", `{"InstanceType":"g6.xlarge"}`)
	awsCLIFails(t, "InvalidParameterValue", "ec2", "create-launch-template", "--launch-template-name", name+"-bad",
		"--launch-template-data", `{"InstanceMarketOptions":{"MarketType":"on-demand"}}`)

	var versions struct{ LaunchTemplateVersions []cliLaunchTemplateVersion }
	awsCLI(t, &versions, "ec2", "describe-launch-template-versions", "--launch-template-id", lt.LaunchTemplateID, "--versions", "$Latest")
	if len(versions.LaunchTemplateVersions) != 1 {
		t.Fatalf("describe-launch-template-versions: %+v", versions)
	}
	v1 := versions.LaunchTemplateVersions[0]
	d := v1.LaunchTemplateData
	if v1.VersionNumber != 1 || !v1.DefaultVersion || d.InstanceMarketOptions == nil || d.InstanceMarketOptions.MarketType != "capacity-block" ||
		d.CapacityReservationSpecification == nil || d.CapacityReservationSpecification.CapacityReservationTarget == nil ||
		d.CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationID != block ||
		len(d.BlockDeviceMappings) != 1 || d.BlockDeviceMappings[0].Ebs.VolumeSize != 200 || len(d.TagSpecifications) != 1 {
		t.Errorf("version 1: %+v", v1)
	}

	// A new version from $Latest overwrites what it names and keeps the rest.
	var v2 struct{ LaunchTemplateVersion cliLaunchTemplateVersion }
	awsCLI(t, &v2, "ec2", "create-launch-template-version", "--launch-template-name", name, "--source-version", "$Latest",
		"--launch-template-data", `{"CapacityReservationSpecification":{"CapacityReservationPreference":"capacity-reservations-only"}}`)
	d2 := v2.LaunchTemplateVersion.LaunchTemplateData
	if v2.LaunchTemplateVersion.VersionNumber != 2 || v2.LaunchTemplateVersion.DefaultVersion ||
		d2.CapacityReservationSpecification == nil || d2.CapacityReservationSpecification.CapacityReservationPreference != "capacity-reservations-only" ||
		d2.CapacityReservationSpecification.CapacityReservationTarget != nil ||
		d2.InstanceMarketOptions == nil || len(d2.BlockDeviceMappings) != 1 {
		t.Errorf("version 2 from $Latest: %+v", v2.LaunchTemplateVersion)
	}
	// Without a source, only what it names.
	var v3 struct{ LaunchTemplateVersion cliLaunchTemplateVersion }
	awsCLI(t, &v3, "ec2", "create-launch-template-version", "--launch-template-id", lt.LaunchTemplateID,
		"--launch-template-data", `{"CapacityReservationSpecification":{"CapacityReservationTarget":{"CapacityReservationResourceGroupArn":"arn:aws:resource-groups:us-west-2:111122223333:group/gpus"}}}`)
	if d3 := v3.LaunchTemplateVersion.LaunchTemplateData; v3.LaunchTemplateVersion.VersionNumber != 3 || d3.InstanceMarketOptions != nil || len(d3.BlockDeviceMappings) != 0 ||
		d3.CapacityReservationSpecification == nil || d3.CapacityReservationSpecification.CapacityReservationTarget == nil ||
		!strings.HasSuffix(d3.CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationResourceGroupArn, "group/gpus") {
		t.Errorf("version 3 without a source: %+v", v3.LaunchTemplateVersion)
	}
	awsCLIFails(t, "InvalidLaunchTemplateId.VersionNotFound", "ec2", "create-launch-template-version", "--launch-template-id", lt.LaunchTemplateID,
		"--source-version", "9", "--launch-template-data", `{"InstanceType":"g6.xlarge"}`)
	awsCLIFails(t, "InvalidParameterCombination", "ec2", "create-launch-template-version", "--launch-template-id", lt.LaunchTemplateID,
		"--launch-template-data", `{"CapacityReservationSpecification":{"CapacityReservationTarget":{"CapacityReservationId":"`+block+`","CapacityReservationResourceGroupArn":"arn:x"}}}`)

	awsCLI(t, &versions, "ec2", "describe-launch-template-versions", "--launch-template-name", name, "--versions", "$Default", "$Latest", "2")
	var numbers []int
	for _, v := range versions.LaunchTemplateVersions {
		numbers = append(numbers, v.VersionNumber)
	}
	if len(numbers) != 3 || numbers[0] != 1 || numbers[1] != 3 || numbers[2] != 2 {
		t.Errorf("versions $Default $Latest 2: %v", numbers)
	}
	awsCLI(t, &versions, "ec2", "describe-launch-template-versions", "--launch-template-name", name)
	if len(versions.LaunchTemplateVersions) != 3 {
		t.Errorf("all versions: %+v", versions.LaunchTemplateVersions)
	}
	awsCLI(t, &versions, "ec2", "describe-launch-template-versions", "--versions", "$Latest", "--filters", "Name=is-default-version,Values=false")
	found := false
	for _, v := range versions.LaunchTemplateVersions {
		found = found || (v.LaunchTemplateID == lt.LaunchTemplateID && v.VersionNumber == 3)
	}
	if !found {
		t.Errorf("every template's $Latest, not default: %+v", versions.LaunchTemplateVersions)
	}
	awsCLIFails(t, "InvalidLaunchTemplateId.VersionNotFound", "ec2", "describe-launch-template-versions", "--launch-template-name", name, "--versions", "7")

	var listed struct{ LaunchTemplates []cliLaunchTemplate }
	awsCLI(t, &listed, "ec2", "describe-launch-templates", "--launch-template-names", name)
	if len(listed.LaunchTemplates) != 1 || listed.LaunchTemplates[0].LatestVersionNumber != 3 || listed.LaunchTemplates[0].DefaultVersionNumber != 1 {
		t.Errorf("describe-launch-templates: %+v", listed)
	}
	awsCLI(t, &listed, "ec2", "describe-launch-templates", "--filters", "Name=tag:owner,Values=gpu")
	if len(listed.LaunchTemplates) != 1 || listed.LaunchTemplates[0].LaunchTemplateID != lt.LaunchTemplateID {
		t.Errorf("describe-launch-templates by tag: %+v", listed)
	}
	awsCLIFails(t, "InvalidLaunchTemplateName.NotFoundException", "ec2", "describe-launch-templates", "--launch-template-names", "no-such-template")
	awsCLIFails(t, "InvalidLaunchTemplateId.NotFound", "ec2", "describe-launch-templates", "--launch-template-ids", "lt-0123456789abcdef0")
	awsCLIFails(t, "InvalidLaunchTemplateId.Malformed", "ec2", "describe-launch-templates", "--launch-template-ids", "template-1")

	var deleted struct{ LaunchTemplate cliLaunchTemplate }
	awsCLI(t, &deleted, "ec2", "delete-launch-template", "--launch-template-id", lt.LaunchTemplateID)
	if deleted.LaunchTemplate.LaunchTemplateName != name {
		t.Errorf("delete-launch-template: %+v", deleted)
	}
	awsCLIFails(t, "InvalidLaunchTemplateId.NotFound", "ec2", "delete-launch-template", "--launch-template-id", lt.LaunchTemplateID)
	awsCLIFails(t, "InvalidLaunchTemplateName.NotFoundException", "ec2", "describe-launch-template-versions", "--launch-template-name", name)
}
