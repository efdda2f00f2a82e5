package provider

// The credentials rule of the proxmox block: a provider block authenticates
// with EITHER an API token OR a username and password. Proxmox VE lets only
// root@pam pass a raw PCI address through (qemu-server
// src/PVE/API2/Qemu.pm, check_hostpci_perm: `return 1 if $authuser eq
// 'root@pam'`, else "only root can set 'hostpciN' config for non-mapped
// devices"), and a token acts as itself (root@pam!tok is not root@pam), so
// one block with both would use only one of them and silently lose what the
// other was for. Written in the block, both is an error at plan; from the
// environment (PM_*), where a shell may hold both, the token is used and a
// warning says so.

// proxmoxTwoAliases is the two-provider-block pattern for configurations that
// need an API token (mapped GPUs) and root@pam's password (raw PCI addresses).
const proxmoxTwoAliases = `provider "gpu" {
  proxmox {
    endpoint         = "https://pve.example.com:8006/api2/json"
    api_token_id     = "terraform@pve!gpu"
    api_token_secret = var.proxmox_api_token_secret
  }
}

provider "gpu" {
  alias = "root"
  proxmox {
    endpoint = "https://pve.example.com:8006/api2/json"
    username = "root@pam"
    password = var.proxmox_root_password
  }
}

resource "gpu_passthrough_vm" "raw" {
  provider = gpu.root
  # gpu { pci_address = "0000:01:00.0" }
}`

// proxmoxBothCredentials is the error for a block that sets both, naming the
// settings as name does.
func proxmoxBothCredentials(name func(attr string) string) string {
	return "the proxmox block sets both an API token (" + name("api_token_id") + ", " + name("api_token_secret") + ") and a username and password (" +
		name("username") + ", " + name("password") + "): set one of them. A provider block authenticates one way. Proxmox VE lets only root@pam, " +
		"logged in with its password, pass a raw PCI address (gpu { pci_address = ... }) through; an API token, even root@pam's, passes GPUs " +
		"only by cluster PCI mapping (gpu { mapping = ... }). Keep the token and use mappings, or keep root@pam's password; where some VMs need " +
		"raw addresses, give root@pam's password its own provider block with an alias and set provider on those resources:\n\n" + proxmoxTwoAliases
}

// proxmoxTokenWins is the warning for an environment that holds both an API
// token and a username or password (and a block that sets neither): the
// token is used.
func proxmoxTokenWins(tokenID string) string {
	return "PM_API_TOKEN_ID and PM_API_TOKEN_SECRET are set, and so is PM_USER or PM_PASS; the provider's proxmox block sets no credentials. " +
		"The provider authenticates with the API token " + tokenID + " and ignores PM_USER and PM_PASS, so raw PCI addresses " +
		"(gpu { pci_address = ... }), which Proxmox VE accepts only from root@pam logged in with its password, are refused. Unset the variables " +
		"you do not mean; to use both, write each in its own provider block, one with an alias:\n\n" + proxmoxTwoAliases
}

// proxmoxTokenWinsSummary is that warning's summary.
const proxmoxTokenWinsSummary = "Proxmox VE: the API token from PM_API_TOKEN_ID is used, PM_USER and PM_PASS are ignored"

// tokenWinsWarning is proxmoxTokenWins when the block sets no credentials
// and the environment holds both an API token and a username or password,
// else "".
func (s proxmoxSettings) tokenWinsWarning(getenv func(string) string) string {
	if s.APITokenID != "" || s.APITokenSecret != "" || s.Username != "" || s.Password != "" {
		return ""
	}
	if (getenv("PM_API_TOKEN_ID") != "" || getenv("PM_API_TOKEN_SECRET") != "") && (getenv("PM_USER") != "" || getenv("PM_PASS") != "") {
		return proxmoxTokenWins(getenv("PM_API_TOKEN_ID"))
	}
	return ""
}
