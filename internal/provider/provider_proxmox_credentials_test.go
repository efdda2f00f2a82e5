package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// terraformPlanFails runs `terraform plan` on config (provider block and
// data sources), which must fail, and returns its error output with
// Terraform's line wrapping undone.
func terraformPlanFails(t *testing.T, config string) string {
	t.Helper()
	tf, reattach := terraformInit(t, config)
	_, err := tf.Plan(context.Background(), reattach)
	require.Error(t, err, "the plan fails")
	return strings.Join(strings.Fields(strings.NewReplacer("│", " ", "╷", " ", "╵", " ").Replace(err.Error())), " ")
}

// pveInventory reads the inventory through Proxmox, at plan time.
const pveInventory = `
data "gpu_inventory" "pve" {
  source = "proxmox"
}
`

func TestAccProxmoxRejectedCredentialsNameTheSettingNeverItsValue(t *testing.T) {
	testAccPreCheck(t)
	const wrongSecret, wrongPassword = "00000000-dead-beef-0000-000000000000", "not-the-root-password"
	block := func(credentials string) string {
		return fmt.Sprintf(`
provider "gpu" {
  proxmox {
    endpoint       = %q
    ca_certificate = file(%q)
%s
  }
}
`, pve.URL(), pve.CAFile(), credentials) + pveInventory
	}
	for _, c := range []struct {
		description, config, secret string
		env                         map[string]string
		want                        []string
	}{
		{
			description: "a wrong token secret in the provider block",
			config:      block(fmt.Sprintf("    api_token_id = %q\n    api_token_secret = %q", pveemu.TokenID, wrongSecret)),
			secret:      wrongSecret,
			want: []string{"rejected the API token terraform@pve!gpu (from proxmox.api_token_id in the provider block) (401 invalid token value!)",
				"fix proxmox.api_token_secret in the provider block"},
		},
		{
			description: "a wrong token secret in the environment",
			config:      `provider "gpu" {}` + "\n" + pveInventory,
			env:         map[string]string{"PM_API_TOKEN_SECRET": wrongSecret},
			secret:      wrongSecret,
			want: []string{"rejected the API token terraform@pve!gpu (from PM_API_TOKEN_ID (environment variable)) (401 invalid token value!)",
				"fix PM_API_TOKEN_SECRET (environment variable)"},
		},
		{
			description: "a wrong password in the provider block",
			config:      block(fmt.Sprintf("    username = %q\n    password = %q", pveemu.RootUser, wrongPassword)),
			secret:      wrongPassword,
			want: []string{"logging in to Proxmox VE as root@pam",
				"rejected the login of root@pam (username from proxmox.username in the provider block) (401 authentication failure)",
				"fix proxmox.password in the provider block, or proxmox.username in the provider block"},
		},
		{
			description: "a wrong password in the environment",
			config:      `provider "gpu" {}` + "\n" + pveInventory,
			env:         map[string]string{"PM_API_TOKEN_ID": "", "PM_API_TOKEN_SECRET": "", "PM_PASS": wrongPassword},
			secret:      wrongPassword,
			want:        []string{"(username from PM_USER (environment variable)) (401 authentication failure)", "fix PM_PASS (environment variable)"},
		},
		{
			description: "no credentials anywhere",
			config:      `provider "gpu" {}` + "\n" + pveInventory,
			env:         map[string]string{"PM_API_TOKEN_ID": "", "PM_API_TOKEN_SECRET": "", "PM_USER": "", "PM_PASS": ""},
			want: []string{"no Proxmox VE credentials",
				"set proxmox.api_token_id and proxmox.api_token_secret (or PM_API_TOKEN_ID and PM_API_TOKEN_SECRET), or proxmox.username and proxmox.password (or PM_USER and PM_PASS)"},
		},
	} {
		t.Run(c.description, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			out := terraformPlanFails(t, c.config)
			for _, want := range c.want {
				require.Contains(t, out, want)
			}
			if c.secret != "" {
				require.NotContains(t, out, c.secret, "the secret is never printed")
			}
		})
	}
}
