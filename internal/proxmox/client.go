package proxmox

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
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
	Insecure         bool   // skip TLS verification
	UserAgent        string
}

// Client talks to one Proxmox VE cluster. It is safe for concurrent use.
type Client struct {
	api      *pxapi.Client
	http     *http.Client
	baseURL  string
	identity Identity
	// authorize adds the credentials to a request the library cannot make
	// for us (a DELETE whose task we follow).
	authorize func(req *http.Request)
	// vmidMu is held from choosing a free VM ID until the request that
	// takes it is answered (vm_id.go).
	vmidMu sync.Mutex
}

// requestTimeout bounds one HTTP request; tasks are bounded by the caller's
// context.
const requestTimeout = 60 * time.Second

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
			return nil, errors.New("proxmox ca_certificate holds no PEM certificate: give the PEM of the CA that signed the Proxmox VE server certificate (on a node: /etc/pve/pve-root-ca.pem)")
		}
		tlsConfig.RootCAs = pool
	}
	userAgent := s.UserAgent
	if userAgent == "" {
		userAgent = "terraform-provider-gpu"
	}
	transport := &http.Transport{TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment, DisableCompression: true}
	httpClient := &http.Client{Timeout: requestTimeout, Transport: &pveTransport{base: transport, userAgent: userAgent}}
	api, err := pxapi.NewClient(endpoint, httpClient, "", nil, "", 600, false)
	if err != nil {
		return nil, fmt.Errorf("proxmox endpoint %q: %w", endpoint, err)
	}
	c := &Client{api: api, http: httpClient, baseURL: endpoint}

	switch {
	case s.TokenID != "" || s.TokenSecret != "":
		if s.TokenID == "" || s.TokenSecret == "" {
			return nil, errors.New("proxmox api_token_id and api_token_secret go together: set both (PM_API_TOKEN_ID, PM_API_TOKEN_SECRET), or use username and password")
		}
		var id pxapi.ApiTokenID
		if err := id.Parse(s.TokenID); err != nil {
			return nil, fmt.Errorf("proxmox api_token_id %q: %w (for example \"terraform@pve!gpu\")", s.TokenID, err)
		}
		api.SetAPIToken(id, pxapi.ApiTokenSecret(s.TokenSecret))
		user, token, _ := strings.Cut(s.TokenID, "!")
		c.identity = Identity{User: user, TokenID: token, IsToken: true}
		header := "PVEAPIToken=" + s.TokenID + "=" + s.TokenSecret
		c.authorize = func(req *http.Request) { req.Header.Set("Authorization", header) }
	case s.Username != "" || s.Password != "":
		if s.Username == "" || s.Password == "" {
			return nil, errors.New("proxmox username and password go together: set both (PM_USER, PM_PASS), or use an API token")
		}
		if !strings.Contains(s.Username, "@") {
			return nil, fmt.Errorf("proxmox username %q has no realm: write it as user@realm, for example \"root@pam\"", s.Username)
		}
		if err := c.login(ctx, s.Username, s.Password); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("proxmox credentials missing: set api_token_id and api_token_secret (PM_API_TOKEN_ID, PM_API_TOKEN_SECRET) or username and password (PM_USER, PM_PASS)")
	}
	return c, nil
}

// login gets a ticket through the library's client and hands it to the
// library; the ticket and CSRF token also sign our own DELETE requests.
func (c *Client) login(ctx context.Context, username, password string) error {
	body, err := c.api.CreateItemReturnStatus(ctx, map[string]any{"username": username, "password": password}, "/access/ticket")
	if err != nil {
		return fmt.Errorf("logging in to Proxmox VE as %s: %w (check username and password, or use an API token)", username, apiError(err))
	}
	var answer struct {
		Data *struct {
			Ticket   string `json:"ticket"`
			CSRF     string `json:"CSRFPreventionToken"`
			Username string `json:"username"`
			NeedTFA  any    `json:"NeedTFA"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil || answer.Data == nil || answer.Data.Ticket == "" {
		return fmt.Errorf("logging in to Proxmox VE as %s: the answer holds no ticket", username)
	}
	if answer.Data.NeedTFA != nil && answer.Data.NeedTFA != false && answer.Data.NeedTFA != float64(0) {
		return fmt.Errorf("logging in to Proxmox VE as %s: the user needs a second factor, which the provider cannot give: use an API token", username)
	}
	ticket, csrf := answer.Data.Ticket, answer.Data.CSRF
	c.api.SetTicket(ticket, csrf)
	user := username
	if answer.Data.Username != "" {
		user = answer.Data.Username
	}
	c.identity = Identity{User: user}
	c.authorize = func(req *http.Request) {
		req.Header.Set("Authorization", "PVEAuthCookie="+ticket) // as the library sends it
		req.Header.Set("CSRFPreventionToken", csrf)
	}
	return nil
}

// Identity says who the client acts as.
func (c *Client) Identity() Identity { return c.identity }

func normalizeEndpoint(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("proxmox endpoint missing: set endpoint (or PM_API_URL), for example \"https://pve.example.com:8006/api2/json\"")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("proxmox endpoint %q is not an http(s) URL: write it as \"https://HOST:8006/api2/json\"", raw)
	}
	path := strings.TrimSuffix(u.Path, "/")
	if !strings.HasSuffix(path, "/api2/json") {
		path += "/api2/json"
	}
	u.Path = path
	return u.String(), nil
}

// pveTransport sets the user agent, and copies PVE's error text into the
// error body: PVE puts it in the HTTP reason phrase ("500 only root can set
// ...") while its JSON body holds only data (and errors), and the library
// builds its ApiError.Message from the body's "message".
type pveTransport struct {
	base      http.RoundTripper
	userAgent string
}

func (t *pveTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("User-Agent", t.userAgent)
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode < 300 {
		return resp, err
	}
	raw, readErr := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if readErr != nil {
		return nil, readErr
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	phrase := strings.TrimSpace(strings.TrimPrefix(resp.Status, fmt.Sprint(resp.StatusCode)))
	var body map[string]any
	if json.Unmarshal(raw, &body) != nil {
		body = map[string]any{"data": nil}
	}
	if msg, _ := body["message"].(string); msg == "" && phrase != "" {
		body["message"] = phrase
		if rewritten, err := json.Marshal(body); err == nil {
			resp.Body = io.NopCloser(bytes.NewReader(rewritten))
			resp.ContentLength = int64(len(rewritten))
		}
	}
	return resp, nil
}

// apiError turns the library's *ApiError into an error that reads as PVE's
// own answer ("500 only root can set ..."), keeping it for errors.As.
func apiError(err error) error {
	var ae *pxapi.ApiError
	if errors.As(err, &ae) {
		return &APIError{Status: ae.Code, Message: ae.Message, Errors: ae.Errors, err: err}
	}
	return err
}

// APIError is an HTTP error answer of the PVE API.
type APIError struct {
	Status  string // "500"
	Message string
	Errors  map[string]any // per-parameter errors of a 400
	err     error
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

func (e *APIError) Unwrap() error { return e.err }

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
	answer, err := c.api.GetItemList(ctx, path)
	if err != nil {
		return apiError(err)
	}
	raw, err := json.Marshal(answer["data"])
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// post sends a POST and returns the task's UPID ("" when PVE answered
// synchronously).
func (c *Client) post(ctx context.Context, path string, params map[string]any) (string, error) {
	body, err := c.api.CreateItemReturnStatus(ctx, params, path)
	if err != nil {
		return "", apiError(err)
	}
	return upidOf(body)
}

// delete sends a DELETE with query and returns the task's UPID. The library
// has no DELETE that returns its answer, so this one request is ours.
func (c *Client) delete(ctx context.Context, path string, query url.Values) (string, error) {
	target := c.baseURL + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, target, nil)
	if err != nil {
		return "", err
	}
	c.authorize(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var body struct {
			Message string         `json:"message"`
			Errors  map[string]any `json:"errors"`
		}
		_ = json.Unmarshal(raw, &body)
		return "", &APIError{Status: fmt.Sprint(resp.StatusCode), Message: strings.TrimSpace(body.Message), Errors: body.Errors}
	}
	return upidOf(string(raw))
}

func upidOf(body string) (string, error) {
	var answer struct {
		Data any `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil {
		return "", fmt.Errorf("reading a Proxmox answer: %w", err)
	}
	if s, ok := answer.Data.(string); ok && strings.HasPrefix(s, "UPID:") {
		return s, nil
	}
	return "", nil
}
