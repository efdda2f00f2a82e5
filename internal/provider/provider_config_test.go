package provider

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/stretchr/testify/require"
)

// countingServer stands where a cluster, EKS or Proxmox would be and counts
// every request that reaches it.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestAccProvider_invalidConfigFailsAtPlanWithoutContactingAnything(t *testing.T) {
	testAccPreCheck(t)
	srv, hits := countingServer(t)
	inventory := `
data "gpu_inventory" "all" {
  source = "kubernetes"
}
`
	step := func(providerBlock, wantErr string) resource.TestStep {
		return resource.TestStep{
			Config:      providerBlock + inventory,
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(wantErr),
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			step(fmt.Sprintf(`
provider "gpu" {
  kubernetes {
    host               = %q
    client_certificate = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
  }
}`, srv.URL), `(?s)kubernetes.client_certificate is set without\s+kubernetes.client_key`),
			step(fmt.Sprintf(`
provider "gpu" {
  kubernetes {
    host        = %q
    config_path = "~/.kube/config"
  }
}`, srv.URL), `(?s)kubernetes.config_path and kubernetes.host are both set`),
			step(`
provider "gpu" {
  kubernetes {
    host = "10.0.0.1:6443"
  }
}`, `(?s)kubernetes.host "10.0.0.1:6443" is not a URL`),
			step(fmt.Sprintf(`
provider "gpu" {
  kubernetes {
    host                   = %q
    insecure               = true
    cluster_ca_certificate = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
  }
}`, srv.URL), `(?s)kubernetes.insecure = true`),
			step(fmt.Sprintf(`
provider "gpu" {
  aws {
    region = "virginia"
    endpoints {
      eks = %q
    }
  }
}`, srv.URL), `(?s)aws.region "virginia" is not an AWS region name`),
			step(`
provider "gpu" {
  aws {
    endpoints {
      ec2 = "ec2.internal"
    }
  }
}`, `(?s)aws.endpoints.ec2`),
			step(fmt.Sprintf(`
provider "gpu" {
  proxmox {
    endpoint         = "%s/api2/json"
    api_token_id     = "terraform-gpu"
    api_token_secret = "00000000-0000-0000-0000-000000000000"
  }
}`, srv.URL), `(?s)proxmox.api_token_id "terraform-gpu" is not\s+USER@REALM!TOKENID`),
			step(fmt.Sprintf(`
provider "gpu" {
  proxmox {
    endpoint = "%s/api2/json"
    username = "root@pam"
  }
}`, srv.URL), `(?s)proxmox.username is set without proxmox.password`),
			step(fmt.Sprintf(`
provider "gpu" {
  proxmox {
    endpoint = "%s/json"
  }
}`, srv.URL), `(?s)end it with\s+/api2/json`),
		},
	})
	require.Zero(t, hits.Load(), "a bad configuration must be rejected before anything is contacted")
}

func TestAccProvider_unusedBackendsAreNeverContacted(t *testing.T) {
	testAccPreCheck(t)
	srv, hits := countingServer(t)
	// AWS and Proxmox are configured (pointing at the counting server) but no
	// resource uses them: planning the Kubernetes inventory must not touch them,
	// nor need their credentials.
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: fmt.Sprintf(`
provider "gpu" {
  kubernetes {
    config_path = %q
  }
  aws {
    region = "us-east-1"
    endpoints {
      eks = %q
      ec2 = %q
      sts = %q
    }
  }
  proxmox {
    endpoint = "%s/api2/json"
  }
}

data "gpu_inventory" "all" {
  source = "kubernetes"
}
`, cluster.KubeconfigPath(), srv.URL, srv.URL, srv.URL, srv.URL),
			},
		},
	})
	require.Zero(t, hits.Load(), "AWS and Proxmox endpoints were contacted by a Kubernetes-only plan")
}
