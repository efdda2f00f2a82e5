package provider

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
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
			want: []string{"rejected the API token terraform@pve!gpu (from proxmox.api_token_id in the provider block) (401 Authentication failed!)",
				"check that proxmox.api_token_id in the provider block names a token that exists",
				"and that proxmox.api_token_secret in the provider block is the secret shown when it was made"},
		},
		{
			description: "a wrong token secret in the environment",
			config:      `provider "gpu" {}` + "\n" + pveInventory,
			env:         map[string]string{"PM_API_TOKEN_SECRET": wrongSecret},
			secret:      wrongSecret,
			want: []string{"rejected the API token terraform@pve!gpu (from PM_API_TOKEN_ID (environment variable)) (401 Authentication failed!)",
				"and that PM_API_TOKEN_SECRET (environment variable) is the secret shown when it was made"},
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

func TestProxmoxBlockWithATokenAndAPasswordIsRefusedWithTheTwoAliasPattern(t *testing.T) {
	for _, c := range []struct {
		description string
		block       proxmoxBlockModel
	}{
		{"all four set", proxmoxBlockModel{
			APITokenID: types.StringValue("terraform@pve!gpu"), APITokenSecret: types.StringValue("s"),
			Username: types.StringValue("root@pam"), Password: types.StringValue("p"),
		}},
		{"a token secret and a password, each without its pair", proxmoxBlockModel{
			APITokenSecret: types.StringValue("s"), Password: types.StringValue("p"),
		}},
		{"the password unknown until apply", proxmoxBlockModel{
			APITokenID: types.StringValue("terraform@pve!gpu"), APITokenSecret: types.StringValue("s"),
			Username: types.StringValue("root@pam"), Password: types.StringUnknown(),
		}},
	} {
		t.Run(c.description, func(t *testing.T) {
			diags := c.block.validate()
			require.Len(t, diags.Errors(), 1, "one error, not one per attribute: %v", diags)
			d := diags.Errors()[0]
			at, ok := d.(diag.DiagnosticWithPath)
			require.True(t, ok)
			require.Equal(t, path.Root("proxmox"), at.Path())
			for _, want := range []string{
				"sets both an API token (proxmox.api_token_id, proxmox.api_token_secret) and a username and password (proxmox.username, proxmox.password): set one of them",
				"an API token, even root@pam's, passes GPUs only by cluster PCI mapping",
				`alias = "root"`, "provider = gpu.root",
			} {
				require.Contains(t, d.Detail(), want)
			}
			require.NotContains(t, d.Detail(), "\"s\"", "no secret")
		})
	}
	require.Empty(t, (&proxmoxBlockModel{APITokenID: types.StringValue("terraform@pve!gpu"), APITokenSecret: types.StringValue("s"),
		Username: types.StringNull(), Password: types.StringValue("")}).validate(), "an empty password is not set")
}

func TestProxmoxBlockWithBothKnownOnlyAtApplyIsRefusedWhenTheClientIsBuilt(t *testing.T) {
	env := map[string]string{"PM_API_URL": "https://pve.example.com:8006/api2/json"}
	_, err := proxmoxSettings{APITokenID: "terraform@pve!gpu", APITokenSecret: "s", Username: "root@pam", Password: "p"}.resolve(func(k string) string { return env[k] }, "ua")
	require.ErrorContains(t, err, "the proxmox block sets both an API token")
}

func TestProxmoxEnvironmentWithATokenAndAPasswordUsesTheTokenAndWarns(t *testing.T) {
	env := map[string]string{
		"PM_API_URL": "https://pve.example.com:8006/api2/json", "PM_API_TOKEN_ID": "terraform@pve!gpu", "PM_API_TOKEN_SECRET": "token-secret",
		"PM_USER": "root@pam", "PM_PASS": "root-password",
	}
	getenv := func(k string) string { return env[k] }
	got, err := proxmoxSettings{}.resolve(getenv, "ua")
	require.NoError(t, err)
	require.Equal(t, "terraform@pve!gpu", got.TokenID)
	require.Empty(t, got.Username, "the token wins")
	require.Empty(t, got.Password)
	warning := proxmoxSettings{}.tokenWinsWarning(getenv)
	for _, want := range []string{"authenticates with the API token terraform@pve!gpu and ignores PM_USER and PM_PASS", "raw PCI addresses", `alias = "root"`} {
		require.Contains(t, warning, want)
	}
	require.NotContains(t, warning, "token-secret")
	require.NotContains(t, warning, "root-password")

	require.Empty(t, proxmoxSettings{Username: "root@pam", Password: "p"}.tokenWinsWarning(getenv), "the block's credentials take nothing from the environment")
	env["PM_API_TOKEN_ID"], env["PM_API_TOKEN_SECRET"] = "", ""
	require.Empty(t, proxmoxSettings{}.tokenWinsWarning(getenv), "only a password: nothing to warn of")
	got, err = proxmoxSettings{}.resolve(getenv, "ua")
	require.NoError(t, err)
	require.Equal(t, "root@pam", got.Username)
}

func TestAccProxmoxCredentialsRule(t *testing.T) {
	testAccPreCheck(t)
	t.Run("both in the provider block fail the plan, naming the two-alias pattern", func(t *testing.T) {
		out := terraformPlanFails(t, fmt.Sprintf(`
provider "gpu" {
  proxmox {
    endpoint         = %q
    ca_certificate   = file(%q)
    api_token_id     = %q
    api_token_secret = %q
    username         = %q
    password         = %q
  }
}
`, pve.URL(), pve.CAFile(), pveemu.TokenID, pveemu.TokenSecret, pveemu.RootUser, pveemu.RootPassword)+pveInventory)
		require.Contains(t, out, "sets both an API token")
		require.Contains(t, out, "provider = gpu.root")
		require.NotContains(t, out, pveemu.RootPassword)
	})
	t.Run("both in the environment: the token is used, with a warning", func(t *testing.T) {
		for k, v := range pve.Env() {
			t.Setenv(k, v)
		}
		require.NotEmpty(t, os.Getenv("PM_PASS"), "the testbed's environment holds root@pam's password beside the token")
		diags := terraformPlan(t, `provider "gpu" {}`+"\n"+pveInventory)
		require.Len(t, warnings(diags, proxmoxTokenWinsSummary), 1, "once, however many reads: %+v", diags)
	})
	t.Run("the two-alias pattern plans", func(t *testing.T) {
		diags := terraformPlan(t, fmt.Sprintf(`
provider "gpu" {
  proxmox {
    endpoint         = %[1]q
    ca_certificate   = file(%[2]q)
    api_token_id     = %[3]q
    api_token_secret = %[4]q
  }
}

provider "gpu" {
  alias = "root"
  proxmox {
    endpoint       = %[1]q
    ca_certificate = file(%[2]q)
    username       = %[5]q
    password       = %[6]q
  }
}

data "gpu_inventory" "token" {
  source = "proxmox"
}

data "gpu_inventory" "root" {
  provider = gpu.root
  source   = "proxmox"
}
`, pve.URL(), pve.CAFile(), pveemu.TokenID, pveemu.TokenSecret, pveemu.RootUser, pveemu.RootPassword))
		require.Empty(t, warnings(diags, proxmoxTokenWinsSummary))
	})
}
