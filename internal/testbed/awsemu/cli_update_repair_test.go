package awsemu

import (
	"encoding/json"
	"strings"
	"testing"

	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// awsCLIError runs the AWS CLI as awsCLI does, without retries, and
// returns its standard error; the command must fail.
func awsCLIError(t *testing.T, args ...string) string {
	t.Helper()
	cmd, cancel := awsCLICommand(t, args...)
	defer cancel()
	cmd.Env = append(cmd.Env, "AWS_MAX_ATTEMPTS=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err == nil {
		t.Fatalf("aws %s succeeded, want an error: %s", strings.Join(args, " "), out)
	}
	return stderr.String()
}

func createArgs(name string, extra ...string) []string {
	return append([]string{"eks", "create-nodegroup", "--cluster-name", emu.ClusterName(), "--nodegroup-name", name,
		"--node-role", testNodeRole, "--subnets", testSubnetIDs[0], "--ami-type", "AL2023_x86_64_NVIDIA",
		"--instance-types", "g6.xlarge", "--scaling-config", "minSize=0,maxSize=1,desiredSize=0"}, extra...)
}

func TestAWSCLIUpdateStrategyAndNodeRepairConfigAreEchoed(t *testing.T) {
	requireTestbed(t)
	const name = "cli-repair"
	deleteGroupAtEnd(t, name)
	var created struct {
		Nodegroup struct {
			UpdateConfig     map[string]any
			NodeRepairConfig map[string]any
		}
	}
	awsCLI(t, &created, createArgs(name, "--update-config", "maxUnavailable=1,updateStrategy=MINIMAL",
		"--node-repair-config", `{"enabled":true,"maxParallelNodesRepairedCount":2,"maxUnhealthyNodeThresholdPercentage":20,`+
			`"nodeRepairConfigOverrides":[{"nodeMonitoringCondition":"AcceleratedHardwareReady","nodeUnhealthyReason":"NvidiaXID31Error",`+
			`"minRepairWaitTimeMins":10,"repairAction":"Reboot"}]}`)...)
	if got := created.Nodegroup.UpdateConfig["updateStrategy"]; got != "MINIMAL" {
		t.Errorf("create-nodegroup updateConfig = %v, want updateStrategy MINIMAL", created.Nodegroup.UpdateConfig)
	}
	overrides, _ := created.Nodegroup.NodeRepairConfig["nodeRepairConfigOverrides"].([]any)
	if created.Nodegroup.NodeRepairConfig["enabled"] != true || created.Nodegroup.NodeRepairConfig["maxParallelNodesRepairedCount"] != float64(2) || len(overrides) != 1 {
		t.Errorf("create-nodegroup nodeRepairConfig = %v", created.Nodegroup.NodeRepairConfig)
	}
	waitNodegroupStatus(t, testClients(), name, ekstypes.NodegroupStatusActive)

	var updated struct {
		Update struct {
			ID     string
			Params []struct{ Type, Value string }
		}
	}
	awsCLI(t, &updated, "eks", "update-nodegroup-config", "--cluster-name", emu.ClusterName(), "--nodegroup-name", name,
		"--update-config", "updateStrategy=DEFAULT", "--node-repair-config", "enabled=false")
	var types []string
	for _, p := range updated.Update.Params {
		types = append(types, p.Type)
	}
	if !strings.Contains(strings.Join(types, ","), "UpdateStrategy") || !strings.Contains(strings.Join(types, ","), "NodeRepairEnabled") {
		t.Errorf("update-nodegroup-config params = %+v, want UpdateStrategy and NodeRepairEnabled", updated.Update.Params)
	}
	waitUpdateSuccessful(t, testClients(), name, updated.Update.ID)
	var described struct {
		Nodegroup struct {
			UpdateConfig     map[string]any
			NodeRepairConfig map[string]any
		}
	}
	awsCLI(t, &described, "eks", "describe-nodegroup", "--cluster-name", emu.ClusterName(), "--nodegroup-name", name)
	if described.Nodegroup.UpdateConfig["updateStrategy"] != "DEFAULT" || described.Nodegroup.UpdateConfig["maxUnavailable"] != float64(1) {
		t.Errorf("after the update, updateConfig = %v, want maxUnavailable 1 kept and updateStrategy DEFAULT", described.Nodegroup.UpdateConfig)
	}
	if described.Nodegroup.NodeRepairConfig["enabled"] != false {
		t.Errorf("after the update, nodeRepairConfig = %v, want enabled false", described.Nodegroup.NodeRepairConfig)
	}
}

func TestAWSCLIRefusesWhatEKSRefusesInRepairAndTaints(t *testing.T) {
	requireTestbed(t)
	deleteGroupAtEnd(t, "cli-refused") // only if the emulator wrongly accepts one
	for _, c := range []struct {
		description string
		args        []string
		want        string
	}{
		{"both counts and percentages of parallel repairs", []string{"--node-repair-config", "enabled=true,maxParallelNodesRepairedCount=1,maxParallelNodesRepairedPercentage=10"}, "maxParallelNodesRepaired"},
		{"a percentage over 100", []string{"--node-repair-config", "enabled=true,maxUnhealthyNodeThresholdPercentage=101"}, "maxUnhealthyNodeThresholdPercentage"},
		{"an override without all of its values", []string{"--node-repair-config", `{"enabled":true,"nodeRepairConfigOverrides":[{"nodeMonitoringCondition":"AcceleratedHardwareReady","repairAction":"Replace"}]}`}, "nodeRepairConfigOverrides"},
		{"an unknown update strategy", []string{"--update-config", "maxUnavailable=1,updateStrategy=FAST"}, "updateStrategy"},
		{"a taint key with a space", []string{"--taints", "key=dedicated gpu,value=x,effect=NO_SCHEDULE"}, "dedicated gpu"},
		{"a taint key that starts with a hyphen", []string{"--taints", "key=-gpu,value=x,effect=NO_SCHEDULE"}, "-gpu"},
		{"a taint key with a '!'", []string{"--taints", "key=gpu!,value=x,effect=NO_SCHEDULE"}, "gpu!"},
	} {
		t.Run(c.description, func(t *testing.T) {
			stderr := awsCLIError(t, createArgs("cli-refused", c.args...)...)
			if !strings.Contains(stderr, "InvalidParameterException") || !strings.Contains(stderr, c.want) {
				t.Errorf("stderr = %s, want InvalidParameterException naming %q", stderr, c.want)
			}
		})
	}
}

// EKS answers a name in use before it validates the rest of the request.
func TestAWSCLICreateWithANameInUseIsResourceInUseFirst(t *testing.T) {
	requireTestbed(t)
	const name = "cli-in-use"
	deleteGroupAtEnd(t, name)
	awsCLI(t, nil, createArgs(name)...)
	stderr := awsCLIError(t, "eks", "create-nodegroup", "--cluster-name", emu.ClusterName(), "--nodegroup-name", name,
		"--node-role", "not-a-role", "--subnets", "subnet-0000000000000dead")
	if !strings.Contains(stderr, "ResourceInUseException") {
		t.Errorf("stderr = %s, want ResourceInUseException", stderr)
	}
}

// A group without instanceTypes gets EKS's default, t3.medium.
func TestAWSCLIGroupWithoutInstanceTypesIsT3Medium(t *testing.T) {
	requireTestbed(t)
	const name = "cli-default-type"
	deleteGroupAtEnd(t, name)
	var created struct {
		Nodegroup struct{ InstanceTypes []string }
	}
	awsCLI(t, &created, "eks", "create-nodegroup", "--cluster-name", emu.ClusterName(), "--nodegroup-name", name,
		"--node-role", testNodeRole, "--subnets", testSubnetIDs[0], "--scaling-config", "minSize=0,maxSize=1,desiredSize=0")
	if b, _ := json.Marshal(created.Nodegroup.InstanceTypes); string(b) != `["t3.medium"]` {
		t.Errorf("instanceTypes = %s, want [\"t3.medium\"]", b)
	}
}
