package provider

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// proxmoxBlockModel is the provider's `proxmox` block.
type proxmoxBlockModel struct {
	Endpoint       types.String `tfsdk:"endpoint"`
	APITokenID     types.String `tfsdk:"api_token_id"`
	APITokenSecret types.String `tfsdk:"api_token_secret"`
	Username       types.String `tfsdk:"username"`
	Password       types.String `tfsdk:"password"`
	InsecureTLS    types.Bool   `tfsdk:"insecure_tls"`
	CACertificate  types.String `tfsdk:"ca_certificate"`
}

// proxmoxSettings is the `proxmox` block before the PM_* environment
// variables fill what it leaves unset.
type proxmoxSettings struct {
	Endpoint                   string
	APITokenID, APITokenSecret string
	Username, Password         string
	InsecureTLS                bool
	// CACertificate is PEM (the environment's PM_CA_CERT_FILE is a path).
	CACertificate string
}

var (
	// proxmoxTokenIDPattern is USER@REALM!TOKENID, e.g. terraform@pve!gpu.
	proxmoxTokenIDPattern = regexp.MustCompile(`^[^@!\s]+@[^@!\s]+![A-Za-z][A-Za-z0-9._-]*$`)
	// proxmoxUserPattern is USER@REALM, e.g. root@pam.
	proxmoxUserPattern = regexp.MustCompile(`^[^@!\s]+@[^@!\s]+$`)
)

func proxmoxBlockSchema() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "Proxmox VE settings, for `gpu_passthrough_vm`, `gpu_pci_mapping` and `gpu_inventory` with `source = \"proxmox\"`. " +
			"Authenticate with EITHER an API token (`api_token_id`, `api_token_secret`) OR a username and password, never both in one block (a plan " +
			"error). Proxmox lets only `root@pam` logged in with its password pass raw (unmapped) PCI addresses through, which no API token can do, " +
			"not even root@pam's: with a token, pass GPUs by cluster PCI mapping; where both are needed, write two provider blocks, the second with " +
			"an `alias`. From the environment, when both a token and a username or password are set, the token is used and a warning says so. Unset attributes fall back " +
			"to the environment variables the Telmate provider reads: `PM_API_URL`, `PM_API_TOKEN_ID`, `PM_API_TOKEN_SECRET`, `PM_USER`, `PM_PASS`, " +
			"`PM_TLS_INSECURE`, and `PM_CA_CERT_FILE` (a path) for `ca_certificate`. The API is contacted only when a Proxmox resource or data source is used.",
		Attributes: map[string]schema.Attribute{
			"endpoint": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "API URL, e.g. `https://pve.example.com:8006/api2/json` (`/api2/json` is added when the path is empty). Environment: `PM_API_URL`.",
			},
			"api_token_id": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "API token ID as `USER@REALM!TOKENID`, e.g. `terraform@pve!gpu`. Needs `api_token_secret`. Environment: `PM_API_TOKEN_ID`.",
			},
			"api_token_secret": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "Secret (UUID) of the API token. Environment: `PM_API_TOKEN_SECRET`.",
			},
			"username": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "User as `USER@REALM`, e.g. `root@pam`. Needs `password`. Environment: `PM_USER`.",
			},
			"password": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "Password of `username`. Environment: `PM_PASS`.",
			},
			"insecure_tls": schema.BoolAttribute{
				Optional:            true,
				MarkdownDescription: "Skip verification of the API's TLS certificate. Off by default: prefer `ca_certificate`. Environment: `PM_TLS_INSECURE`.",
			},
			"ca_certificate": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "PEM of the CA that signed the API's TLS certificate, verified against instead of the system's roots: Proxmox " +
					"signs each node's certificate with its own cluster CA, `/etc/pve/pve-root-ca.pem` on any node. Environment: " +
					"`PM_CA_CERT_FILE`, the path of a PEM file.",
			},
		},
	}
}

func (m *proxmoxBlockModel) settings() proxmoxSettings {
	if m == nil {
		return proxmoxSettings{}
	}
	return proxmoxSettings{
		Endpoint:       m.Endpoint.ValueString(),
		APITokenID:     m.APITokenID.ValueString(),
		APITokenSecret: m.APITokenSecret.ValueString(),
		Username:       m.Username.ValueString(),
		Password:       m.Password.ValueString(),
		InsecureTLS:    m.InsecureTLS.ValueBool(),
		CACertificate:  m.CACertificate.ValueString(),
	}
}

// anyUnknown says whether a setting is unknown until apply (it refers to
// another resource): the provider then reads nothing at plan time.
func (m *proxmoxBlockModel) anyUnknown() bool {
	if m == nil {
		return false
	}
	for _, v := range []attr.Value{m.Endpoint, m.APITokenID, m.APITokenSecret, m.Username, m.Password, m.CACertificate, m.InsecureTLS} {
		if v.IsUnknown() {
			return true
		}
	}
	return false
}

func (m *proxmoxBlockModel) validate() diag.Diagnostics {
	var diags diag.Diagnostics
	if m == nil {
		return diags
	}
	// Written in the block is enough: a value unknown until apply is set too.
	written := func(v types.String) bool { return v.IsUnknown() || v.ValueString() != "" }
	if (written(m.APITokenID) || written(m.APITokenSecret)) && (written(m.Username) || written(m.Password)) {
		diags.AddAttributeError(path.Root("proxmox"), "Invalid proxmox provider configuration", proxmoxBothCredentials(inBlock))
		return diags
	}
	for _, v := range []types.String{m.Endpoint, m.APITokenID, m.APITokenSecret, m.Username, m.Password, m.CACertificate} {
		if v.IsUnknown() {
			return diags
		}
	}
	for _, problem := range m.settings().problems(inBlock) {
		at := path.Root("proxmox")
		if problem.attribute != "" {
			at = at.AtName(problem.attribute)
		}
		diags.AddAttributeError(at, "Invalid proxmox provider configuration", problem.text)
	}
	return diags
}

type settingProblem struct{ attribute, text string }

// proxmoxEnv is the environment variable each attribute of the proxmox
// block falls back to.
var proxmoxEnv = map[string]string{
	"endpoint": "PM_API_URL", "api_token_id": "PM_API_TOKEN_ID", "api_token_secret": "PM_API_TOKEN_SECRET",
	"username": "PM_USER", "password": "PM_PASS", "insecure_tls": "PM_TLS_INSECURE", "ca_certificate": "PM_CA_CERT_FILE",
}

// inBlock names an attribute of the provider's proxmox block.
func inBlock(attr string) string { return "proxmox." + attr }

// inEnv names the environment variable an attribute falls back to.
func inEnv(attr string) string { return proxmoxEnv[attr] }

// problems lists settings that can never work, naming each setting as
// name says (the block's attribute, or the environment variable it came
// from) and the fix; never a secret's value.
func (s proxmoxSettings) problems(name func(attr string) string) []settingProblem {
	var out []settingProblem
	add := func(attr, text string) { out = append(out, settingProblem{attr, text}) }
	// bothOrNeither is the problem of one of a pair set without the
	// other, on the one missing.
	bothOrNeither := func(a, aValue, b, bValue string) {
		switch {
		case aValue != "" && bValue == "":
			add(b, name(a)+" is set without "+name(b)+": set both, or neither")
		case bValue != "" && aValue == "":
			add(a, name(b)+" is set without "+name(a)+": set both, or neither")
		}
	}
	if s.Endpoint != "" {
		if problem := checkHTTPURL(s.Endpoint); problem != "" {
			add("endpoint", name("endpoint")+" "+problem+": write it as https://HOST:8006/api2/json")
		} else if u, _ := url.Parse(s.Endpoint); !proxmoxAPIPath(u.Path) {
			add("endpoint", name("endpoint")+" path "+quote(u.Path)+" is not the Proxmox API root: end it with /api2/json, e.g. https://pve.example.com:8006/api2/json")
		}
	}
	if (s.APITokenID != "" || s.APITokenSecret != "") && (s.Username != "" || s.Password != "") {
		add("", proxmoxBothCredentials(name))
		return out
	}
	if s.APITokenID != "" && !proxmoxTokenIDPattern.MatchString(s.APITokenID) {
		add("api_token_id", name("api_token_id")+" "+quote(s.APITokenID)+" is not USER@REALM!TOKENID: write it like terraform@pve!gpu")
	}
	bothOrNeither("api_token_id", s.APITokenID, "api_token_secret", s.APITokenSecret)
	if s.Username != "" && !proxmoxUserPattern.MatchString(s.Username) {
		add("username", name("username")+" "+quote(s.Username)+" is not USER@REALM: write it like root@pam")
	}
	bothOrNeither("username", s.Username, "password", s.Password)
	if s.CACertificate != "" && !strings.Contains(s.CACertificate, "-----BEGIN CERTIFICATE-----") {
		add("ca_certificate", name("ca_certificate")+" is not a PEM certificate: give the PEM text (e.g. file(\"pve-root-ca.pem\")), not a path; "+
			"on a node the cluster CA is /etc/pve/pve-root-ca.pem")
	}
	return out
}

func proxmoxAPIPath(p string) bool {
	p = strings.TrimSuffix(p, "/")
	return p == "" || strings.HasSuffix(p, "/api2/json")
}
