package awsemu

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// awsCLICommand is the AWS CLI with the emulator's environment only (no
// user configuration), printing JSON; cancel ends it.
func awsCLICommand(t *testing.T, args ...string) (cmd *exec.Cmd, cancel context.CancelFunc) {
	t.Helper()
	path, err := exec.LookPath("aws")
	if err != nil {
		if testbed.Required() {
			t.Fatalf("the AWS CLI is not on PATH: %v", err)
		}
		t.Skip("the AWS CLI is not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd = exec.CommandContext(ctx, path, append(args, "--output", "json")...)
	cmd.Env = awsCLIEnviron(t)
	return cmd, cancel
}

// awsCLI runs the AWS CLI and returns its standard output, decoded from
// JSON.
func awsCLI(t *testing.T, out any, args ...string) {
	t.Helper()
	cmd, cancel := awsCLICommand(t, args...)
	defer cancel()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("aws %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if out != nil {
		if err := json.Unmarshal(stdout, out); err != nil {
			t.Fatalf("aws %s printed no JSON: %v\n%s", strings.Join(args, " "), err, stdout)
		}
	}
}

// awsCLIEnviron is the emulator's environment for the AWS CLI, without the
// user's configuration.
func awsCLIEnviron(t *testing.T) []string {
	env := maps.Clone(emu.Env())
	env["PATH"] = os.Getenv("PATH")
	env["HOME"] = t.TempDir()
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	return environ
}

func TestAWSCLIDescribesAndCreates(t *testing.T) {
	requireTestbed(t)
	var cl struct {
		Cluster struct {
			Endpoint, Status, Version string
		}
	}
	awsCLI(t, &cl, "eks", "describe-cluster", "--name", emu.ClusterName())
	if cl.Cluster.Endpoint != cluster.APIServerURL() || cl.Cluster.Status != "ACTIVE" {
		t.Errorf("aws eks describe-cluster: %+v", cl.Cluster)
	}

	const name = "from-cli"
	deleteGroupAtEnd(t, name)
	var created struct {
		Nodegroup struct{ NodegroupName, Status string }
	}
	awsCLI(t, &created, "eks", "create-nodegroup", "--cluster-name", emu.ClusterName(), "--nodegroup-name", name,
		"--node-role", testNodeRole, "--subnets", testSubnetIDs[0], testSubnetIDs[1],
		"--instance-types", "g6.xlarge", "--ami-type", "AL2023_x86_64_NVIDIA",
		"--scaling-config", "minSize=0,maxSize=2,desiredSize=1", "--labels", "team=ml")
	if created.Nodegroup.NodegroupName != name || created.Nodegroup.Status != "CREATING" {
		t.Errorf("aws eks create-nodegroup: %+v", created.Nodegroup)
	}
	waitNodegroupStatus(t, testClients(), name, ekstypes.NodegroupStatusActive)
	var described struct {
		Nodegroup struct {
			Status    string
			Labels    map[string]string
			Resources struct{ AutoScalingGroups []struct{ Name string } }
		}
	}
	awsCLI(t, &described, "eks", "describe-nodegroup", "--cluster-name", emu.ClusterName(), "--nodegroup-name", name)
	if described.Nodegroup.Status != "ACTIVE" || described.Nodegroup.Labels["team"] != "ml" || len(described.Nodegroup.Resources.AutoScalingGroups) != 1 {
		t.Fatalf("aws eks describe-nodegroup: %+v", described.Nodegroup)
	}
	asgName := described.Nodegroup.Resources.AutoScalingGroups[0].Name

	var tags struct{ Tags []struct{ Key, Value string } }
	awsCLI(t, &tags, "autoscaling", "describe-tags", "--filters", "Name=auto-scaling-group,Values="+asgName, "Name=key,Values=eks:nodegroup-name")
	if len(tags.Tags) != 1 || tags.Tags[0].Value != name {
		t.Errorf("aws autoscaling describe-tags: %+v", tags.Tags)
	}
	// The SDK agrees with the CLI about the same group.
	if _, err := testClients().asg.DescribeAutoScalingGroups(context.Background(), &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{asgName}}); err != nil {
		t.Fatal(err)
	}

	var types struct {
		InstanceTypes []struct {
			InstanceType string
			GpuInfo      struct {
				Gpus []struct {
					Name, Manufacturer string
					Count              int
				}
			}
		}
	}
	awsCLI(t, &types, "ec2", "describe-instance-types", "--instance-types", "p5.48xlarge")
	if len(types.InstanceTypes) != 1 || len(types.InstanceTypes[0].GpuInfo.Gpus) != 1 ||
		types.InstanceTypes[0].GpuInfo.Gpus[0].Name != "H100" || types.InstanceTypes[0].GpuInfo.Gpus[0].Count != 8 {
		t.Errorf("aws ec2 describe-instance-types: %+v", types.InstanceTypes)
	}
}

func TestAWSCLITokenAuthenticatesToKubernetes(t *testing.T) {
	requireTestbed(t)
	var credential struct {
		Kind   string
		Status struct{ Token string }
	}
	awsCLI(t, &credential, "eks", "get-token", "--cluster-name", emu.ClusterName())
	if credential.Kind != "ExecCredential" || !strings.HasPrefix(credential.Status.Token, tokenPrefix) {
		t.Fatalf("aws eks get-token: %+v", credential.Kind)
	}
	if err := listNodesWithToken(t, credential.Status.Token); err != nil {
		t.Fatalf("listing nodes with the CLI's token: %v", err)
	}

	awsCLI(t, &credential, "eks", "get-token", "--cluster-name", "another-cluster")
	if err := listNodesWithToken(t, credential.Status.Token); !apierrors.IsUnauthorized(err) {
		t.Fatalf("a token for another cluster: want 401 Unauthorized, got %v", err)
	}
}
