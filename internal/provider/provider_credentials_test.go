package provider

// The provider's credentials through the real Terraform CLI: credentials
// never go to a plain-HTTP API server without
// kubernetes.allow_plaintext_credentials, whichever way they are given;
// credentials the testbed's API server rejects (a wrong token, the token of
// a deleted service account, a foreign CA) fail every resource and data
// source with an error that names the setting to fix.

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// withEnvironment is a PreConfig that sets the KUBE_* variables of vars
// and unsets the others, for the in-process provider; the test's end
// unsets them all.
func withEnvironment(t *testing.T, vars map[string]string) func() {
	names := []string{"KUBE_CONFIG_PATH", "KUBE_CTX", "KUBE_HOST", "KUBE_TOKEN", "KUBE_CLUSTER_CA_CERT_DATA", "KUBE_CLIENT_CERT_DATA", "KUBE_CLIENT_KEY_DATA", "KUBE_INSECURE"}
	return func() {
		// The provider reads an empty variable as an unset one; t.Setenv
		// restores each when the test ends.
		for _, name := range names {
			t.Setenv(name, vars[name])
		}
	}
}

// inventoryOnly is a configuration with the provider block kubernetes
// and one gpu_inventory data source, read at plan time.
func inventoryOnly(kubernetes string) string {
	return fmt.Sprintf(`
provider "gpu" {
  kubernetes {
%s
  }
}

data "gpu_inventory" "all" {
  source = "kubernetes"
}
`, kubernetes)
}

// credentialsKubeconfig writes a kubeconfig whose context "bed" joins
// cluster "bed" (server, with caPEM when set) and user "intruder" with
// token, and returns its path.
func credentialsKubeconfig(t *testing.T, server, caPEM, token string) string {
	t.Helper()
	ca := ""
	if caPEM != "" {
		ca = "certificate-authority-data: " + base64.StdEncoding.EncodeToString([]byte(caPEM))
	}
	return k8s.WriteKubeconfig(t, server, ca, fmt.Sprintf("token: %q", token))
}

func TestAccProvider_plaintextCredentialsNeverLeaveWithoutTheOptIn(t *testing.T) {
	testAccPreCheck(t)
	listener := k8s.NewPlainHTTPTrap(t)
	server := listener.Server.URL
	kubeconfig := credentialsKubeconfig(t, server, "", "kubeconfig-s3cr3t")
	step := func(env map[string]string, kubernetes string, want *regexp.Regexp) resource.TestStep {
		return resource.TestStep{PreConfig: withEnvironment(t, env), Config: inventoryOnly(kubernetes), PlanOnly: true, ExpectError: want}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Attributes: refused by ValidateConfig.
			step(nil, fmt.Sprintf(`host = %q
token = "attr-s3cr3t"`, server),
				wrapped(fmt.Sprintf("kubernetes.host %q is plain HTTP: the token in kubernetes.token would travel in cleartext.", server),
					"set kubernetes.allow_plaintext_credentials = true")),
			// The environment: refused by Configure.
			step(map[string]string{"KUBE_HOST": server, "KUBE_TOKEN": "env-s3cr3t"}, "",
				wrapped("refusing to send credentials to the Kubernetes API server "+server+" over plain HTTP",
					"in use: token from KUBE_TOKEN; server "+server+" from KUBE_HOST.", "Use an https:// URL in KUBE_HOST")),
			step(map[string]string{"KUBE_TOKEN": "env-s3cr3t"}, fmt.Sprintf(`host = %q`, server),
				wrapped("in use: token from KUBE_TOKEN; server "+server+" from kubernetes.host.")),
			// A kubeconfig, from the block and from KUBE_CONFIG_PATH.
			step(nil, fmt.Sprintf(`config_path = %q`, kubeconfig),
				wrapped("client-go never sends a kubeconfig user's credentials over plain HTTP",
					`in use: token of user "intruder" of context "bed" (its current-context) in kubeconfig `+kubeconfig+" (kubernetes.config_path)")),
			step(map[string]string{"KUBE_CONFIG_PATH": kubeconfig}, "",
				wrapped("client-go never sends a kubeconfig user's credentials over plain HTTP", "(KUBE_CONFIG_PATH)")),
			// The opt-in does not make client-go send a kubeconfig's.
			step(nil, fmt.Sprintf(`config_path = %q
allow_plaintext_credentials = true`, kubeconfig),
				wrapped("client-go never sends a kubeconfig user's credentials over plain HTTP")),
		},
	})
	require.Zero(t, listener.Credentials.Load(), "credentials arrived over plain HTTP without the opt-in; the last: %q", listener.Authorization())

	// With the opt-in, the token goes, and the listener's 401 is explained.
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			step(map[string]string{"KUBE_TOKEN": "optin-s3cr3t"}, fmt.Sprintf(`host = %q
allow_plaintext_credentials = true`, server),
				wrapped("rejected the credentials (HTTP 401 Unauthorized); in use: token from KUBE_TOKEN. Fix KUBE_TOKEN:")),
		},
	})
	require.Equal(t, "Bearer optin-s3cr3t", listener.Authorization())
}

func TestAccProvider_credentialsAKubeconfigWouldIgnoreAreRefused(t *testing.T) {
	testAccPreCheck(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: withEnvironment(t, nil),
				Config: inventoryOnly(fmt.Sprintf(`config_path = %q
token = "would-be-ignored"`, cluster.KubeconfigPath())),
				PlanOnly:    true,
				ExpectError: wrapped("kubernetes.token only applies with kubernetes.host: with a kubeconfig (kubernetes.config_path)"),
			},
			{
				PreConfig:   withEnvironment(t, map[string]string{"KUBE_CONFIG_PATH": cluster.KubeconfigPath(), "KUBE_TOKEN": "would-be-ignored"}),
				Config:      inventoryOnly(""),
				PlanOnly:    true,
				ExpectError: wrapped("KUBE_TOKEN only applies with kubernetes.host: with a kubeconfig (KUBE_CONFIG_PATH)"),
			},
		},
	})
}

func TestAccProvider_rejectedCredentialsNameTheSettingInEveryResource(t *testing.T) {
	testAccPreCheck(t)
	host := cluster.APIServerURL()
	ca := string(cluster.RESTConfig().CAData)
	namespace := "auth-rejected"
	explicit := fmt.Sprintf(`host = %q
cluster_ca_certificate = %q
token = "wrong-s3cr3t"`, host, ca)
	rejectedToken := wrapped("the Kubernetes API server "+host+" rejected the credentials (HTTP 401 Unauthorized); in use: token from kubernetes.token.",
		"Fix kubernetes.token: the API server rejects a token that is wrong, expired or revoked")
	resources := func(body string) string {
		return fmt.Sprintf(`
provider "gpu" {
  kubernetes {
%s
  }
}
%s`, explicit, body)
	}
	otherCA, err := testbed.NewAuthority("some-other-ca")
	require.NoError(t, err)
	kubeconfig := credentialsKubeconfig(t, host, ca, "kubeconfig-s3cr3t")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{PreConfig: withEnvironment(t, nil), Config: inventoryOnly(explicit), PlanOnly: true, ExpectError: rejectedToken},
			{Config: resources(fmt.Sprintf(`
resource "gpu_workload" "train" {
  kind = "job"
  metadata {
    name      = "train"
    namespace = %q
  }
  container {
    image = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
  }
  gpu {
    count = 1
  }
}`, namespace)), ExpectError: rejectedToken},
			{Config: resources(fmt.Sprintf(`
resource "gpu_device_plugin" "nvidia" {
  namespace = %q
}`, namespace)), ExpectError: rejectedToken},
			{
				PreConfig: withEnvironment(t, map[string]string{"KUBE_TOKEN": "wrong-s3cr3t"}),
				Config: inventoryOnly(fmt.Sprintf(`host = %q
cluster_ca_certificate = %q`, host, ca)),
				PlanOnly:    true,
				ExpectError: wrapped("in use: token from KUBE_TOKEN. Fix KUBE_TOKEN:"),
			},
			{
				PreConfig: withEnvironment(t, nil),
				Config: inventoryOnly(fmt.Sprintf(`host = %q
cluster_ca_certificate = %q`, host, otherCA.CertPEM())),
				PlanOnly: true,
				ExpectError: wrapped(`presented a certificate issued by "CN=gpu-testbed-ca", which the CA in use does not vouch for;`,
					`in use: CA "CN=some-other-ca" from kubernetes.cluster_ca_certificate.`,
					"Set kubernetes.cluster_ca_certificate to the PEM of the CA that signed the API server's certificate."),
			},
			{
				Config:   inventoryOnly(fmt.Sprintf(`config_path = %q`, kubeconfig)),
				PlanOnly: true,
				ExpectError: wrapped(`in use: token of user "intruder" of context "bed" (its current-context) in kubeconfig `+kubeconfig,
					`Fix user "intruder" in kubeconfig `+kubeconfig, "or choose another context with kubernetes.config_context."),
			},
		},
	})
}

func TestAccProvider_tokenOfADeletedServiceAccountFailsThePlan(t *testing.T) {
	testAccPreCheck(t)
	const account = "terraform-revoked"
	token := cluster.ServiceAccountToken(t, account)
	host := cluster.APIServerURL()
	ca := cluster.RESTConfig().CAData
	config := inventoryOnly(fmt.Sprintf(`host = %q
cluster_ca_certificate = %q
token = %q`, host, ca, token))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// Read, while the service account exists.
			{PreConfig: withEnvironment(t, nil), Config: config},
			// Plan, once it is deleted and the API server has noticed.
			{
				PreConfig: func() {
					ctx := context.Background()
					require.NoError(t, cluster.Client().CoreV1().ServiceAccounts(metav1.NamespaceDefault).Delete(ctx, account, metav1.DeleteOptions{}))
					// kube-apiserver re-checks a token's service account
					// once its 10 s cache of the authentication lapses.
					client, err := cluster.ClientWithToken(token)
					require.NoError(t, err)
					require.Eventually(t, func() bool {
						_, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
						return apierrors.IsUnauthorized(err)
					}, 2*time.Minute, 100*time.Millisecond, "the API server keeps accepting the token of a deleted service account")
				},
				Config:   config,
				PlanOnly: true,
				ExpectError: wrapped("rejected the credentials (HTTP 401 Unauthorized); in use: token from kubernetes.token.",
					"a service account's token stops working once the service account is deleted"),
			},
		},
	})
}
