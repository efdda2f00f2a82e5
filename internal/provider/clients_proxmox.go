package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
)

// proxmoxClients is the Proxmox side of Clients: one proxmox.Client per
// Configure (so per Terraform command), built on first use. With a
// username and password, building it logs in for a ticket.
type proxmoxClients struct {
	settings proxmoxSettings
	// unknown is true when Configure saw proxmox settings unknown until
	// apply: plan-time checks then read nothing.
	unknown bool

	once   sync.Once
	client *proxmox.Client
	err    error
	// warning is proxmoxTokenWins, given once to the first caller's diagnostics.
	warning     string
	warningOnce sync.Once
}

// Proxmox returns the Proxmox VE client of the provider's proxmox block
// and the PM_* environment, building it on the first call.
func (c *Clients) Proxmox(ctx context.Context) (*proxmox.Client, error) {
	p := &c.proxmox
	p.once.Do(func() {
		settings, err := p.settings.resolve(c.env, c.userAgent)
		p.warning = p.settings.tokenWinsWarning(c.env)
		if err != nil {
			p.err = err
			return
		}
		start := time.Now()
		p.client, p.err = settings.Connect(ctx)
		if p.err != nil {
			return
		}
		tflog.Debug(ctx, "connected to Proxmox VE", map[string]any{
			"endpoint": settings.Endpoint, "token": settings.TokenID != "", "user": settings.Username,
			"duration": time.Since(start).String(),
		})
	})
	return p.client, p.err
}

// proxmoxFor returns the Proxmox client for a resource operation, or nil
// after adding an error titled summary to diags.
func (c *Clients) proxmoxFor(ctx context.Context, summary string, diags *diag.Diagnostics) *proxmox.Client {
	if c != nil {
		defer c.proxmox.warningOnce.Do(func() {
			if c.proxmox.warning != "" {
				diags.AddWarning(proxmoxTokenWinsSummary, c.proxmox.warning)
			}
		})
	}
	return backendFor(c, summary, "the Proxmox VE client (provider block proxmox, or the PM_* environment variables)", func() (*proxmox.Client, error) { return c.Proxmox(ctx) }, diags)
}

// proxmoxAtPlan returns the client for plan-time checks, or false when the
// provider is not configured yet or its proxmox settings are unknown until
// apply (the checks then run at apply, before any write).
func (c *Clients) proxmoxAtPlan(ctx context.Context, diags *diag.Diagnostics) (*proxmox.Client, bool) {
	if c == nil {
		return nil, false
	}
	if c.proxmox.unknown {
		tflog.Debug(ctx, "not reading Proxmox at plan: the proxmox settings are unknown until apply")
		return nil, false
	}
	client := c.proxmoxFor(ctx, "checking against Proxmox VE", diags)
	return client, client != nil
}

// resolve fills what the block leaves unset from the PM_* environment.
// Credentials come as a whole from one place: a block that sets any of
// them takes none from the environment, so a block with root@pam's
// password is never overridden by an environment's API token. A block
// with both a token and a password is an error (proxmoxBothCredentials);
// an environment with both gives the token (tokenWinsWarning). Every
// error names the setting to fix where its value came from (the block's
// attribute or the environment variable), and so does the error of a
// token or login Proxmox VE rejects (proxmox.Credentials).
func (s proxmoxSettings) resolve(getenv func(string) string, userAgent string) (proxmox.Settings, error) {
	out := proxmox.Settings{
		Endpoint: s.Endpoint, TokenID: s.APITokenID, TokenSecret: s.APITokenSecret,
		Username: s.Username, Password: s.Password, CACertificatePEM: s.CACertificate, Insecure: s.InsecureTLS,
		UserAgent: userAgent,
	}
	endpointFrom := inBlock
	if out.Endpoint == "" {
		out.Endpoint, endpointFrom = getenv("PM_API_URL"), inEnv
	}
	credentialsFrom, described := inBlock, func(attr string) string { return inBlock(attr) + " in the provider block" }
	if s.APITokenID == "" && s.APITokenSecret == "" && s.Username == "" && s.Password == "" {
		out.TokenID, out.TokenSecret = getenv("PM_API_TOKEN_ID"), getenv("PM_API_TOKEN_SECRET")
		out.Username, out.Password = getenv("PM_USER"), getenv("PM_PASS")
		credentialsFrom, described = inEnv, func(attr string) string { return inEnv(attr) + " (environment variable)" }
		if out.TokenID != "" || out.TokenSecret != "" {
			out.Username, out.Password = "", "" // the token wins (tokenWinsWarning)
		}
	}
	out.Credentials = proxmox.Credentials{
		TokenID: described("api_token_id"), TokenSecret: described("api_token_secret"),
		Username: described("username"), Password: described("password"),
	}
	if !out.Insecure {
		if v := getenv("PM_TLS_INSECURE"); v != "" {
			insecure, err := strconv.ParseBool(v)
			if err != nil {
				return out, fmt.Errorf("PM_TLS_INSECURE %q is not a boolean: set it to true or false", v)
			}
			out.Insecure = insecure
		}
	}
	if out.CACertificatePEM == "" {
		if file := getenv("PM_CA_CERT_FILE"); file != "" {
			pem, err := os.ReadFile(file) //nolint:gosec // the user names the file
			if err != nil {
				return out, fmt.Errorf("reading PM_CA_CERT_FILE: %w", err)
			}
			if !strings.Contains(string(pem), "-----BEGIN CERTIFICATE-----") {
				return out, fmt.Errorf("PM_CA_CERT_FILE %s holds no PEM certificate: point it at the cluster CA (/etc/pve/pve-root-ca.pem on a node)", file)
			}
			out.CACertificatePEM = string(pem)
		}
	}
	if out.Endpoint == "" {
		return out, errors.New("no Proxmox VE endpoint: set proxmox.endpoint in the provider block, or PM_API_URL, " +
			"e.g. https://pve.example.com:8006/api2/json")
	}
	if out.TokenID == "" && out.TokenSecret == "" && out.Username == "" && out.Password == "" {
		return out, errors.New("no Proxmox VE credentials: neither the provider's proxmox block nor the environment sets any; set " +
			"proxmox.api_token_id and proxmox.api_token_secret (or PM_API_TOKEN_ID and PM_API_TOKEN_SECRET), or proxmox.username " +
			"and proxmox.password (or PM_USER and PM_PASS)")
	}
	name := func(attr string) string {
		if attr == "endpoint" {
			return endpointFrom(attr)
		}
		return credentialsFrom(attr)
	}
	for _, problem := range (proxmoxSettings{
		Endpoint: out.Endpoint, APITokenID: out.TokenID, APITokenSecret: out.TokenSecret, Username: out.Username, Password: out.Password,
	}).problems(name) {
		return out, errors.New(problem.text)
	}
	return out, nil
}
