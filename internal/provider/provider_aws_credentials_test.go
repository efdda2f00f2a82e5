package provider

// AWS credentials through the real Terraform CLI: a wrong secret and no
// credentials at all each fail with an error that names the setting in use,
// where its value came from and what to fix, and never holds the secret.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/awsemu"
)

// awsWrongSecret is a secret access key the emulator refuses.
const awsWrongSecret = "wrongAWSs3cr3tNeverPrinted00000000000000"

// withAWSEnvironment is a PreConfig that sets vars over the testbed's AWS
// environment; the test's end restores it.
func withAWSEnvironment(t *testing.T, vars map[string]string) func() {
	return func() {
		for k, v := range vars {
			t.Setenv(k, v)
		}
	}
}

// awsCredentialsFailure runs config under vars and returns the error
// Terraform reported (the test fails when there is none).
func awsCredentialsFailure(t *testing.T, vars map[string]string, config string) string {
	t.Helper()
	var got error
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		// The error is examined below: ExpectError can only say what it holds.
		ErrorCheck: func(err error) error { got = err; return nil },
		Steps: []resource.TestStep{
			{PreConfig: withAWSEnvironment(t, vars), Config: config, PlanOnly: true},
		},
	})
	require.Error(t, got, "the plan succeeded")
	return strings.Join(strings.Fields(got.Error()), " ")
}

func TestAccProvider_awsCredentialErrorsNameTheSettingAndItsOrigin(t *testing.T) {
	testAccPreCheck(t)
	ec2Inventory := providerConfig() + `
data "gpu_inventory" "ec2" {
  source = "ec2"
}
`
	// The EKS cluster's access goes through EKS's DescribeCluster.
	eksInventory := fmt.Sprintf(`
provider "gpu" {
  kubernetes {
    eks {
      cluster_name = %q
    }
  }
}

data "gpu_inventory" "cluster" {
  source = "kubernetes"
}
`, emu.ClusterName())
	keyID := "****************" + awsemu.AccessKeyID[len(awsemu.AccessKeyID)-4:]
	fromEnvironment := "in use: access key ID " + keyID + " and secret access key from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (the environment). " +
		"Fix AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"

	t.Run("a wrong secret in the environment, refused by EC2", func(t *testing.T) {
		got := awsCredentialsFailure(t, map[string]string{"AWS_SECRET_ACCESS_KEY": awsWrongSecret}, ec2Inventory)
		require.Contains(t, got, "AWS rejected the credentials (EC2 DescribeInstanceTypes: AuthFailure): the access key ID is unknown, or the secret access key does not match it;")
		require.Contains(t, got, fromEnvironment)
		require.NotContains(t, got, awsWrongSecret)
	})
	t.Run("a wrong secret in the environment, refused by EKS", func(t *testing.T) {
		got := awsCredentialsFailure(t, map[string]string{"AWS_SECRET_ACCESS_KEY": awsWrongSecret}, eksInventory)
		require.Contains(t, got, "AWS rejected the credentials (EKS DescribeCluster: InvalidSignatureException): the signature does not match:")
		require.Contains(t, got, fromEnvironment)
		require.NotContains(t, got, awsWrongSecret)
	})
	t.Run("a wrong secret in the profile aws.profile names", func(t *testing.T) {
		credentials := filepath.Join(t.TempDir(), "credentials")
		require.NoError(t, os.WriteFile(credentials, []byte(fmt.Sprintf("[gpu-ci]\naws_access_key_id = %s\naws_secret_access_key = %s\n",
			awsemu.AccessKeyID, awsWrongSecret)), 0o600))
		config := strings.Replace(ec2Inventory, `provider "gpu" {`, `provider "gpu" {
  aws {
    profile = "gpu-ci"
  }`, 1)
		got := awsCredentialsFailure(t, map[string]string{"AWS_SHARED_CREDENTIALS_FILE": credentials}, config)
		require.Contains(t, got, `in use: access key ID `+keyID+` and secret access key of profile "gpu-ci" (aws.profile) in `+credentials+".")
		require.Contains(t, got, `Fix aws_access_key_id and aws_secret_access_key of profile "gpu-ci" in `+credentials+"; or choose another profile with aws.profile or AWS_PROFILE.")
		require.NotContains(t, got, awsWrongSecret)
	})
	t.Run("no credentials anywhere", func(t *testing.T) {
		got := awsCredentialsFailure(t, map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}, ec2Inventory)
		require.Contains(t, got, "no AWS credentials were found for EC2 DescribeInstanceTypes; in use: the EC2 instance's IAM role from the instance metadata service (IMDS), "+
			`the last resort of the chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set, and profile "default" (the default profile) in `+os.DevNull+" or "+os.DevNull+
			" has no credentials; and IMDS is off (AWS_EC2_METADATA_DISABLED).")
		require.Contains(t, got, "Fix the credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or choose a profile that has credentials with aws.profile or AWS_PROFILE")
		require.NotContains(t, got, awsemu.SecretAccessKey)
	})
}
