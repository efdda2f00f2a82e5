package provider

import (
	"fmt"
	"os"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/awsemu"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// testAccProtoV6ProviderFactories serves the provider in-process to the real
// Terraform CLI that terraform-plugin-testing drives.
var testAccProtoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"gpu": providerserver.NewProtocol6WithError(New("test")()),
}

// cluster is this package's testbed: a real kube-apiserver, scheduler and
// controllers with kwok GPU nodes. It is nil when TF_ACC is unset.
var cluster *k8s.Cluster

// emu is the testbed's AWS emulator: EKS, EC2, Auto Scaling and STS on
// loopback, whose one EKS cluster's API server is cluster's (it accepts
// EKS tokens through the emulator's webhook). Its Env() is in this
// process's environment, so the provider's AWS SDK clients reach it.
var emu *awsemu.Emulator

// pve is the testbed's Proxmox VE emulator. Its Env() (PM_API_URL, the
// privilege-separated token, root@pam's password, PM_CA_CERT_FILE) is in
// this process's environment, so a provider with no proxmox block reaches
// it with the token, verifying TLS against the testbed CA.
var pve *pveemu.Emulator

// testNodes is the fleet every acceptance test in this package sees.
var testNodes = []struct{ name, instanceType string }{
	{"gpu-p5-0", "p5.48xlarge"},
	{"gpu-p4d-0", "p4d.24xlarge"},
	{"gpu-g5-0", "g5.xlarge"},
	{"gpu-g5-1", "g5.xlarge"},
	{"gpu-g4dn-0", "g4dn.xlarge"},
	{"cpu-0", "m5.xlarge"},
}

func TestMain(m *testing.M) {
	if os.Getenv("TF_ACC") == "" {
		// Acceptance tests skip themselves without TF_ACC; unit tests need no cluster.
		os.Exit(m.Run())
	}
	if os.Getenv("TF_ACC_TERRAFORM_PATH") == "" {
		if bins, err := testbed.Binaries(); err == nil {
			os.Setenv("TF_ACC_TERRAFORM_PATH", bins.Terraform)
		}
	}
	// The provider's address is gpuinfra/gpu under both CLIs; OpenTofu
	// rejects the legacy default namespace that terraform-plugin-testing uses.
	if os.Getenv("TF_ACC_PROVIDER_NAMESPACE") == "" {
		os.Setenv("TF_ACC_PROVIDER_NAMESPACE", "gpuinfra")
	}
	var nodes []k8s.NodeSpec
	for _, n := range testNodes {
		profile, ok := ec2catalog.Lookup(n.instanceType)
		if !ok {
			fmt.Fprintf(os.Stderr, "no testbed profile for %s\n", n.instanceType)
			os.Exit(1)
		}
		nodes = append(nodes, k8s.NodeSpec{Name: n.name, InstanceType: profile, GFDLabeled: true})
	}
	// The AWS emulator starts first: kube-apiserver is configured with its
	// EKS token webhook.
	var c *k8s.Cluster
	emu, c = awsemu.NewWithCluster(awsemu.Options{}, k8s.Options{Nodes: nodes})
	pve = pveemu.New(pveemu.Options{})
	os.Exit(testbed.Main(m, testbed.Options{Backends: []testbed.Backend{emu, c, pve}}, func(*testbed.Testbed) {
		for k, v := range emu.Env() {
			_ = os.Setenv(k, v)
		}
		for k, v := range pve.Env() {
			_ = os.Setenv(k, v)
		}
		cluster = c
	}))
}

// providerConfig points the provider at this package's testbed.
func providerConfig() string {
	return fmt.Sprintf(`
provider "gpu" {
  kubernetes {
    config_path = %q
  }
}
`, cluster.KubeconfigPath())
}

// testAccPreCheck skips an acceptance test when TF_ACC is unset, as
// resource.Test itself does, before the test touches the cluster. `make test`
// sets TF_ACC, and there a missing testbed fails TestMain instead.
func testAccPreCheck(t *testing.T) {
	t.Helper()
	if cluster == nil {
		t.Skip("acceptance test: set TF_ACC=1 (make test runs it)")
	}
}
