package proxmox

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/hashicorp/terraform-plugin-log/tflogtest"
	"github.com/stretchr/testify/require"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

func TestRedactedPathHidesSecretParameters(t *testing.T) {
	for _, c := range []struct {
		description, method, path string
		form                      url.Values
		want                      string
	}{
		{"a path without query is kept", http.MethodGet, "/nodes", nil, "/nodes"},
		{"a query in the path is kept", http.MethodGet, "/cluster/resources?type=vm", nil, "/cluster/resources?type=vm"},
		{"a password in a GET's query is redacted", http.MethodGet, "/access/ticket", url.Values{"username": {"root@pam"}, "password": {"hunter2"}},
			"/access/ticket?password=redacted&username=root%40pam"},
		{"a DELETE's query is shown", http.MethodDelete, "/nodes/pve/qemu/100", url.Values{"purge": {"1"}}, "/nodes/pve/qemu/100?purge=1"},
		{"a POST's form is its body, never shown", http.MethodPost, "/access/ticket", url.Values{"password": {"hunter2"}}, "/access/ticket"},
	} {
		t.Run(c.description, func(t *testing.T) {
			require.Equal(t, c.want, redactedPath(c.path, c.form, c.method))
		})
	}
}

// loggedLines are the JSON log lines written to buf (which they empty).
func loggedLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	entries, err := tflogtest.MultilineJSONDecode(buf)
	require.NoError(t, err)
	return entries
}

func TestTestbed_everyCallIsLoggedWithoutSecrets(t *testing.T) {
	var buf bytes.Buffer
	ctx := tflogtest.RootLogger(context.Background(), &buf)
	s := testbedSettings(t)
	s.Username, s.Password = pveemu.RootUser, pveemu.RootPassword
	c, err := s.Connect(ctx)
	require.NoError(t, err)
	_, err = c.NextVMID(ctx)
	require.NoError(t, err)
	s.Username, s.Password, s.TokenID, s.TokenSecret = "", "", pveemu.TokenID, "00000000-0000-0000-0000-000000000bad"
	c, err = s.Connect(ctx)
	require.NoError(t, err)
	_, err = c.NextVMID(ctx)
	require.Error(t, err)

	out := buf.String()
	var calls []string
	for _, e := range loggedLines(t, &buf) {
		if e["@message"] == "called Proxmox VE" {
			calls = append(calls, fmt.Sprintf("%v %v %v", e["method"], e["path"], e["status"]))
			require.Contains(t, e, "duration_ms")
		}
	}
	require.Equal(t, []string{"POST /access/ticket 200", "GET /cluster/nextid 200", "GET /cluster/nextid 401"}, calls, "every call, after its answer")
	for _, secret := range []string{pveemu.RootPassword, "00000000-0000-0000-0000-000000000bad", "PVEAuthCookie", "PVE:root@pam:", "CSRFPreventionToken", "PVEAPIToken"} {
		require.NotContains(t, out, secret)
	}
}
