package proxmox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// call sends one request to the API (form as the query of a GET or
// DELETE, the url-encoded body of a POST or PUT) and returns the answer's
// body. A non-2xx answer is an *APIError (a *CredentialsError for a 401,
// a *PermissionError for a 403, each wrapping it);
// the request is bounded by ctx and requestTimeout and never retried. It
// logs the call at debug level once it is answered: method, path, status
// and duration, never a header, a body or a secret (redactedPath).
func (c *Client) call(ctx context.Context, method, path string, form url.Values) ([]byte, error) {
	target := c.baseURL + path
	var body io.Reader
	switch {
	case len(form) == 0:
	case method == http.MethodGet || method == http.MethodDelete:
		target += querySeparator(path) + form.Encode()
	default:
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	c.authorize(req)
	started := time.Now()
	fields := map[string]any{"method": method, "path": redactedPath(path, form, method)}
	resp, err := c.http.Do(req)
	if err != nil {
		fields["duration_ms"], fields["error"] = time.Since(started).Milliseconds(), err.Error()
		tflog.Debug(ctx, "Proxmox VE call failed", fields)
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	fields["status"], fields["duration_ms"] = resp.StatusCode, time.Since(started).Milliseconds()
	if err != nil {
		fields["error"] = err.Error()
		tflog.Debug(ctx, "Proxmox VE call failed", fields)
		return nil, fmt.Errorf("reading the answer to %s %s: %w", method, path, err)
	}
	tflog.Debug(ctx, "called Proxmox VE", fields)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.answerError(resp, raw)
	}
	return raw, nil
}

// answerError is the error of a non-2xx answer: PVE's message from the
// body, else from the reason phrase (pve-http-server puts it there and
// answers 401s with no body).
func (c *Client) answerError(resp *http.Response, raw []byte) error {
	var body struct {
		Message string         `json:"message"`
		Errors  map[string]any `json:"errors"`
	}
	_ = json.Unmarshal(raw, &body)
	msg := strings.TrimSpace(body.Message)
	if msg == "" {
		msg = strings.TrimSpace(strings.TrimPrefix(resp.Status, fmt.Sprint(resp.StatusCode)))
	}
	apiErr := &APIError{Status: fmt.Sprint(resp.StatusCode), Message: msg, Errors: body.Errors}
	if resp.StatusCode == http.StatusUnauthorized {
		return &CredentialsError{Endpoint: c.baseURL, Identity: c.identity, Credentials: c.credentials, Err: apiErr}
	}
	if resp.StatusCode == http.StatusForbidden {
		return permissionError(apiErr)
	}
	return apiErr
}

func querySeparator(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}

// secretParams are the parameters whose values never reach a log line:
// the login's password, a ticket, cloud-init's password.
var secretParams = []string{"password", "new-password", "ticket", "cipassword", "token", "secret"}

// redactedPath is path with the query a GET or DELETE sends, each
// secret parameter's value replaced.
func redactedPath(path string, form url.Values, method string) string {
	base, query, _ := strings.Cut(path, "?")
	values, err := url.ParseQuery(query)
	if err != nil {
		return base + "?(unparsable query)"
	}
	if method == http.MethodGet || method == http.MethodDelete {
		for k, v := range form {
			values[k] = append(values[k], v...)
		}
	}
	if len(values) == 0 {
		return base
	}
	for k := range values {
		if slices.Contains(secretParams, strings.ToLower(k)) {
			values[k] = []string{"redacted"}
		}
	}
	return base + "?" + values.Encode()
}
