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
}

// Proxmox returns the Proxmox VE client of the provider's proxmox block
// and the PM_* environment, building it on the first call.
func (c *Clients) Proxmox(ctx context.Context) (*proxmox.Client, error) {
	p := &c.proxmox
	p.once.Do(func() {
		settings, err := p.settings.resolve(c.env, c.userAgent)
		if err != nil {
			p.err = err
			return
		}
		start := time.Now()
		p.client, p.err = settings.Connect(ctx)
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
// password is never overridden by an environment's API token.
func (s proxmoxSettings) resolve(getenv func(string) string, userAgent string) (proxmox.Settings, error) {
	out := proxmox.Settings{
		Endpoint: s.Endpoint, TokenID: s.APITokenID, TokenSecret: s.APITokenSecret,
		Username: s.Username, Password: s.Password, CACertificatePEM: s.CACertificate, Insecure: s.InsecureTLS,
		UserAgent: userAgent,
	}
	if out.Endpoint == "" {
		out.Endpoint = getenv("PM_API_URL")
	}
	if s.APITokenID == "" && s.APITokenSecret == "" && s.Username == "" && s.Password == "" {
		out.TokenID, out.TokenSecret = getenv("PM_API_TOKEN_ID"), getenv("PM_API_TOKEN_SECRET")
		out.Username, out.Password = getenv("PM_USER"), getenv("PM_PASS")
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
	for _, problem := range (proxmoxSettings{
		Endpoint: out.Endpoint, APITokenID: out.TokenID, APITokenSecret: out.TokenSecret, Username: out.Username, Password: out.Password,
	}).problems() {
		return out, errors.New(problem.text + " (from the proxmox block or the PM_* environment variables)")
	}
	return out, nil
}
