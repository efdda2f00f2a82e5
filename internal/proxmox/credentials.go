package proxmox

import (
	"net/url"
	"strings"
)

// Credentials names, without any value, where each credential setting of
// a client came from, for the error of a rejected login or token: e.g.
// TokenSecret "PM_API_TOKEN_SECRET (environment variable)". The caller
// (the provider) knows its settings' names; a name left empty reads as
// what the setting is ("the API token's secret").
type Credentials struct {
	TokenID, TokenSecret, Username, Password string
}

func (c Credentials) or(name, fallback string) string {
	if name != "" {
		return name
	}
	return fallback
}

// CredentialsError is PVE's 401: it rejected the API token or the
// username and password. Its text names the setting to fix and where it
// came from, never a secret.
type CredentialsError struct {
	Endpoint    string
	Identity    Identity // who the client tried to act as
	Credentials Credentials
	Err         *APIError // PVE's answer ("401 Authentication failed!", "401 invalid token value!" before 9.1.5)
}

func (e *CredentialsError) Unwrap() error { return e.Err }

func (e *CredentialsError) Error() string {
	host := e.Endpoint
	if u, err := url.Parse(e.Endpoint); err == nil && u.Host != "" {
		host = u.Scheme + "://" + u.Host
	}
	reason := strings.ToLower(e.Err.Message)
	c := e.Credentials
	var who, fix string
	if e.Identity.IsToken {
		tokenID := e.Identity.User + "!" + e.Identity.TokenID
		who = "the API token " + tokenID + " (from " + c.or(c.TokenID, "the API token ID") + ")"
		switch {
		case strings.Contains(reason, "invalid token value"):
			fix = "the token's secret is not the one PVE holds for " + tokenID + ": fix " + c.or(c.TokenSecret, "the API token's secret") +
				" (Datacenter > Permissions > API Tokens shows a secret only when the token is made: make a new one if it is lost)"
		case strings.Contains(reason, "no such") || strings.Contains(reason, "invalid token") || strings.Contains(reason, "expired"):
			fix = "PVE has no such valid token: fix " + c.or(c.TokenID, "the API token ID") + " (USER@REALM!TOKENID, as Datacenter > Permissions > API Tokens lists it)"
		case strings.Contains(reason, "authentication failed"):
			// pveproxy since pve-manager 9.1.5 gives one reason for any token
			// that fails verification, so either part may be wrong.
			fix = "PVE does not say which part is wrong: check that " + c.or(c.TokenID, "the API token ID") + " names a token that exists (USER@REALM!TOKENID, " +
				"as Datacenter > Permissions > API Tokens lists it) and that " + c.or(c.TokenSecret, "the API token's secret") +
				" is the secret shown when it was made (make a new token if it is lost)"
		default:
			fix = "fix " + c.or(c.TokenID, "the API token ID") + " and " + c.or(c.TokenSecret, "the API token's secret")
		}
	} else {
		user := e.Identity.User
		who = "the login of " + user + " (username from " + c.or(c.Username, "the username") + ")"
		fix = "the username, its realm or the password is wrong: fix " + c.or(c.Password, "the password") + ", or " + c.or(c.Username, "the username") +
			" (USER@REALM, e.g. root@pam)"
	}
	return "Proxmox VE at " + host + " rejected " + who + " (" + e.Err.Error() + "): " + fix
}
