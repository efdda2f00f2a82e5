package provider

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProxmoxSettingsTakeCredentialsFromOnePlace(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "pve-root-ca.pem")
	const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	require.NoError(t, os.WriteFile(caFile, []byte(pem), 0o600))
	env := map[string]string{
		"PM_API_URL": "https://pve.example.com:8006/api2/json", "PM_API_TOKEN_ID": "terraform@pve!gpu", "PM_API_TOKEN_SECRET": "token-secret",
		"PM_USER": "root@pam", "PM_PASS": "root-password", "PM_CA_CERT_FILE": caFile,
	}
	getenv := func(k string) string { return env[k] }

	got, err := proxmoxSettings{}.resolve(getenv, "ua")
	require.NoError(t, err)
	require.Equal(t, "https://pve.example.com:8006/api2/json", got.Endpoint)
	require.Equal(t, "terraform@pve!gpu", got.TokenID, "no block: the environment's credentials")
	require.Empty(t, got.Username, "the environment holds both: the token wins")
	require.Empty(t, got.Password)
	require.Equal(t, pem, got.CACertificatePEM, "PM_CA_CERT_FILE is a path, read")
	require.False(t, got.Insecure)

	got, err = proxmoxSettings{Username: "root@pam", Password: "block-password", CACertificate: "-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----"}.resolve(getenv, "ua")
	require.NoError(t, err)
	require.Empty(t, got.TokenID, "a block with credentials takes none from the environment: root@pam's password login is not overridden by PM_API_TOKEN_ID")
	require.Empty(t, got.TokenSecret)
	require.Equal(t, "block-password", got.Password)
	require.Contains(t, got.CACertificatePEM, "X", "the block's PEM wins over PM_CA_CERT_FILE")

	env["PM_TLS_INSECURE"] = "maybe"
	_, err = proxmoxSettings{}.resolve(getenv, "ua")
	require.ErrorContains(t, err, "PM_TLS_INSECURE \"maybe\" is not a boolean")
	env["PM_TLS_INSECURE"] = "true"
	got, err = proxmoxSettings{}.resolve(getenv, "ua")
	require.NoError(t, err)
	require.True(t, got.Insecure)

	env["PM_CA_CERT_FILE"] = filepath.Join(t.TempDir(), "missing.pem")
	_, err = proxmoxSettings{}.resolve(getenv, "ua")
	require.ErrorContains(t, err, "reading PM_CA_CERT_FILE")

	delete(env, "PM_CA_CERT_FILE")
	env["PM_API_TOKEN_ID"] = "terraform-gpu"
	_, err = proxmoxSettings{}.resolve(getenv, "ua")
	require.ErrorContains(t, err, "is not USER@REALM!TOKENID")
	require.NotContains(t, err.Error(), "token-secret", "no secret in errors")
}

func TestProxmoxBlockRefusesACACertificatePath(t *testing.T) {
	problems := proxmoxSettings{CACertificate: "/etc/pve/pve-root-ca.pem"}.problems(inBlock)
	require.Len(t, problems, 1)
	require.Equal(t, "ca_certificate", problems[0].attribute)
	require.Contains(t, problems[0].text, "not a path")
}

func TestProxmoxSettingsErrorsNameWhereEachSettingCameFrom(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	_, err := proxmoxSettings{}.resolve(getenv, "ua")
	require.ErrorContains(t, err, "no Proxmox VE endpoint: set proxmox.endpoint in the provider block, or PM_API_URL")

	env["PM_API_URL"] = "https://pve.example.com:8006/api2/json"
	_, err = proxmoxSettings{}.resolve(getenv, "ua")
	require.ErrorContains(t, err, "no Proxmox VE credentials")
	require.ErrorContains(t, err, "proxmox.api_token_id and proxmox.api_token_secret (or PM_API_TOKEN_ID and PM_API_TOKEN_SECRET)")

	env["PM_API_TOKEN_ID"], env["PM_API_TOKEN_SECRET"] = "terraform@pve!gpu", "env-token-secret"
	got, err := proxmoxSettings{}.resolve(getenv, "ua")
	require.NoError(t, err)
	require.Equal(t, "PM_API_TOKEN_SECRET (environment variable)", got.Credentials.TokenSecret, "a rejected token's error names the variable")
	require.Equal(t, "PM_API_TOKEN_ID (environment variable)", got.Credentials.TokenID)

	got, err = proxmoxSettings{APITokenID: "terraform@pve!gpu", APITokenSecret: "block-token-secret"}.resolve(getenv, "ua")
	require.NoError(t, err)
	require.Equal(t, "proxmox.api_token_secret in the provider block", got.Credentials.TokenSecret)

	env["PM_API_TOKEN_SECRET"] = ""
	_, err = proxmoxSettings{}.resolve(getenv, "ua")
	require.EqualError(t, err, "PM_API_TOKEN_ID is set without PM_API_TOKEN_SECRET: set both, or neither")
	_, err = proxmoxSettings{Username: "root", Password: "block-password"}.resolve(getenv, "ua")
	require.EqualError(t, err, `proxmox.username "root" is not USER@REALM: write it like root@pam`)
	require.NotContains(t, err.Error(), "block-password")
}
