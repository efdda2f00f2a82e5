package proxmox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	pxapi "github.com/Telmate/proxmox-api-go/proxmox"
)

// Settings is how to reach and authenticate to a Proxmox VE API. Either
// TokenID + TokenSecret (an API token, "user@realm!name") or Username +
// Password (a ticket login) must be set.
type Settings struct {
	Endpoint         string // "https://pve:8006/api2/json" ("/api2/json" is added when missing)
	TokenID          string
	TokenSecret      string
	Username         string
	Password         string
	CACertificatePEM string // verify the server against this CA instead of the system roots
	// Credentials names where the credentials came from, for the error of
	// a rejected token or login (never their values).
	Credentials Credentials
	Insecure    bool // skip TLS verification
	UserAgent   string
}

// Client talks to one Proxmox VE cluster. It is safe for concurrent use.
type Client struct {
	http      *http.Client
	baseURL   string
	userAgent string
	identity  Identity
	// credentials names where the credentials came from, for a 401's
	// error.
	credentials Credentials
	// authorize adds the credentials to a request: the token, or the
	// ticket and (on every call but GET) its CSRF token.
	authorize func(req *http.Request)
	// vmidMu is held from choosing a free VM ID until the request that
	// takes it is answered (vm_id.go).
	vmidMu sync.Mutex
}

// requestTimeout bounds one HTTP request; tasks are bounded by the caller's
// context.
const requestTimeout = 60 * time.Second

// ErrNoCredentials is Connect's error for Settings with neither an API
// token nor a username and password.
var ErrNoCredentials = errors.New("no Proxmox VE credentials: an API token (its ID and secret) or a username and password is needed")

// Connect builds a client. With a token it makes no call; with a user and
// password it logs in for a ticket (POST /access/ticket) and nothing else.
func (s Settings) Connect(ctx context.Context) (*Client, error) {
	endpoint, err := normalizeEndpoint(s.Endpoint)
	if err != nil {
		return nil, err
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: s.Insecure} //nolint:gosec // opt-in, documented as insecure
	if s.CACertificatePEM != "" && !s.Insecure {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(s.CACertificatePEM)) {
			return nil, errors.New("the Proxmox VE CA certificate holds no PEM certificate: give the PEM of the CA that signed the Proxmox VE server certificate (on a node: /etc/pve/pve-root-ca.pem)")
		}
		tlsConfig.RootCAs = pool
	}
	userAgent := s.UserAgent
	if userAgent == "" {
		userAgent = "terraform-provider-gpu"
	}
	transport := &http.Transport{TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment, DisableCompression: true}
	c := &Client{http: &http.Client{Timeout: requestTimeout, Transport: transport}, baseURL: endpoint, userAgent: userAgent,
		credentials: s.Credentials, authorize: func(*http.Request) {}}

	switch {
	case s.TokenID != "" || s.TokenSecret != "":
		if s.TokenID == "" || s.TokenSecret == "" {
			return nil, errors.New("a Proxmox VE API token needs both its ID and its secret")
		}
		var id pxapi.ApiTokenID
		if err := id.Parse(s.TokenID); err != nil {
			return nil, fmt.Errorf("the Proxmox VE API token ID %q: %w (for example \"terraform@pve!gpu\")", s.TokenID, err)
		}
		user, token, _ := strings.Cut(s.TokenID, "!")
		c.identity = Identity{User: user, TokenID: token, IsToken: true}
		header := "PVEAPIToken=" + s.TokenID + "=" + s.TokenSecret
		c.authorize = func(req *http.Request) { req.Header.Set("Authorization", header) }
	case s.Username != "" || s.Password != "":
		if s.Username == "" || s.Password == "" {
			return nil, errors.New("a Proxmox VE login needs both a username and a password")
		}
		if !strings.Contains(s.Username, "@") {
			return nil, fmt.Errorf("the Proxmox VE username %q has no realm: write it as user@realm, for example \"root@pam\"", s.Username)
		}
		c.identity = Identity{User: s.Username}
		if err := c.login(ctx, s.Username, s.Password); err != nil {
			return nil, err
		}
	default:
		return nil, ErrNoCredentials
	}
	return c, nil
}

// login gets a ticket; the ticket and CSRF token sign every later request.
func (c *Client) login(ctx context.Context, username, password string) error {
	raw, err := c.call(ctx, http.MethodPost, "/access/ticket", url.Values{"username": {username}, "password": {password}})
	if err != nil {
		return fmt.Errorf("logging in to Proxmox VE as %s: %w", username, err)
	}
	var answer struct {
		Data *struct {
			Ticket   string `json:"ticket"`
			CSRF     string `json:"CSRFPreventionToken"`
			Username string `json:"username"`
			NeedTFA  any    `json:"NeedTFA"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil || answer.Data == nil || answer.Data.Ticket == "" {
		return fmt.Errorf("logging in to Proxmox VE as %s: the answer holds no ticket", username)
	}
	if answer.Data.NeedTFA != nil && answer.Data.NeedTFA != false && answer.Data.NeedTFA != float64(0) {
		return fmt.Errorf("logging in to Proxmox VE as %s: the user needs a second factor, which the provider cannot give: use an API token", username)
	}
	ticket, csrf := answer.Data.Ticket, answer.Data.CSRF
	user := username
	if answer.Data.Username != "" {
		user = answer.Data.Username
	}
	c.identity = Identity{User: user}
	c.authorize = func(req *http.Request) {
		req.Header.Set("Cookie", "PVEAuthCookie="+ticket)
		if req.Method != http.MethodGet {
			req.Header.Set("CSRFPreventionToken", csrf)
		}
	}
	return nil
}

// Identity says who the client acts as.
func (c *Client) Identity() Identity { return c.identity }

// ErrNoEndpoint is Connect's error for Settings without an Endpoint.
var ErrNoEndpoint = errors.New("no Proxmox VE API URL, for example \"https://pve.example.com:8006/api2/json\"")

func normalizeEndpoint(raw string) (string, error) {
	if raw == "" {
		return "", ErrNoEndpoint
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("the Proxmox VE API URL %q is not an http(s) URL: write it as \"https://HOST:8006/api2/json\"", raw)
	}
	path := strings.TrimSuffix(u.Path, "/")
	if !strings.HasSuffix(path, "/api2/json") {
		path += "/api2/json"
	}
	u.Path = path
	return u.String(), nil
}

// APIError is an HTTP error answer of the PVE API: its status, and PVE's
// message (the body's "message", else the HTTP reason phrase, where
// pve-http-server puts it).
type APIError struct {
	Status  string // "500"
	Message string
	Errors  map[string]any // per-parameter errors of a 400
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Status)
	if e.Message != "" {
		b.WriteString(" " + e.Message)
	}
	for k, v := range e.Errors {
		fmt.Fprintf(&b, "; %s: %v", k, v)
	}
	return b.String()
}

// PermissionError is a 403: PVE's permission check refused the call.
// pve-common PVE/Exception.pm raise_perm_exc words it "Permission check
// failed (<path>, <privileges>)", the privileges joined by '|' when any one
// of them would do (pve-access-control PVE/RPCEnvironment.pm check_any;
// check names the first one missing); Path and Privileges are read from
// it, empty when PVE gave no detail ("Permission check failed").
type PermissionError struct {
	Path       string   // "/mapping/pci"
	Privileges []string // ["Mapping.Modify"]
	Err        *APIError
}

func (e *PermissionError) Error() string { return e.Err.Error() }

func (e *PermissionError) Unwrap() error { return e.Err }

// permissionDetail is raise_perm_exc's "(<path>, <privileges>)".
var permissionDetail = regexp.MustCompile(`^Permission check failed \((/[^,]*), ([^)]+)\)`)

// permissionError is the *PermissionError of a 403's *APIError.
func permissionError(apiErr *APIError) *PermissionError {
	pe := &PermissionError{Err: apiErr}
	if m := permissionDetail.FindStringSubmatch(apiErr.Message); m != nil {
		pe.Path = m[1]
		for _, p := range strings.Split(m[2], "|") {
			if p = strings.TrimSpace(p); p != "" {
				pe.Privileges = append(pe.Privileges, p)
			}
		}
	}
	return pe
}

// IsNotFound reports whether PVE said the object does not exist: a 404, or
// the 500 "Configuration file '...' does not exist" PVE answers for an
// absent VM.
func IsNotFound(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	return ae.Status == "404" || strings.Contains(ae.Message, "does not exist") || strings.HasPrefix(ae.Message, "no such")
}

// get reads path's "data" into out.
func (c *Client) get(ctx context.Context, path string, out any) error {
	raw, err := c.call(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	var answer struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if len(answer.Data) == 0 {
		answer.Data = json.RawMessage("null")
	}
	if err := json.Unmarshal(answer.Data, out); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// post sends a POST with params as its form and returns the task's UPID
// ("" when PVE answered synchronously). Booleans go as 1 and 0; empty
// values are left out.
func (c *Client) post(ctx context.Context, path string, params map[string]any) (string, error) {
	form := url.Values{}
	for k, v := range params {
		var text string
		switch v := v.(type) {
		case bool:
			text = map[bool]string{true: "1", false: "0"}[v]
		default:
			text = fmt.Sprint(v)
		}
		if text != "" {
			form.Set(k, text)
		}
	}
	raw, err := c.call(ctx, http.MethodPost, path, form)
	if err != nil {
		return "", err
	}
	return upidOf(raw)
}

// delete sends a DELETE with query and returns the task's UPID.
func (c *Client) delete(ctx context.Context, path string, query url.Values) (string, error) {
	raw, err := c.call(ctx, http.MethodDelete, path, query)
	if err != nil {
		return "", err
	}
	return upidOf(raw)
}

func upidOf(body []byte) (string, error) {
	var answer struct {
		Data any `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return "", fmt.Errorf("reading a Proxmox answer: %w", err)
	}
	if s, ok := answer.Data.(string); ok && strings.HasPrefix(s, "UPID:") {
		return s, nil
	}
	return "", nil
}
