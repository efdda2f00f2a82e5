package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/terraform-exec/tfexec"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
	"github.com/stretchr/testify/require"
)

// terraform-plugin-testing hides a plan's warnings; these helpers run the
// real Terraform CLI (TF_ACC_TERRAFORM_PATH: Terraform or OpenTofu) on a
// configuration with `terraform plan -json` and return every diagnostic,
// warnings included, as the CLI reports it: with the configuration line it
// attaches the diagnostic to.

// providerAddress is where the configurations of these helpers find the
// provider; the explicit host makes OpenTofu look there too.
const providerAddress = "registry.terraform.io/gpuinfra/gpu"

// planDiagnostic is one diagnostic of `terraform plan -json`.
type planDiagnostic struct {
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
	Detail   string `json:"detail"`
	// Snippet is the configuration the diagnostic points at; Code is the
	// line of the attribute its path names.
	Snippet *struct {
		Code string `json:"code"`
	} `json:"snippet"`
}

// warnings are the diagnostics of severity warning whose summary contains
// summary.
func warnings(diags []planDiagnostic, summary string) []planDiagnostic {
	var out []planDiagnostic
	for _, d := range diags {
		if d.Severity == "warning" && strings.Contains(d.Summary, summary) {
			out = append(out, d)
		}
	}
	return out
}

// servedProvider serves a fresh instance of this provider in-process until
// the test ends, as terraform-plugin-testing does, and returns how
// Terraform reattaches to it.
func servedProvider(t *testing.T) tfexec.ReattachInfo {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reattach := make(chan *plugin.ReattachConfig)
	closed := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- tf6server.Serve(providerAddress, providerserver.NewProtocol6(New("test")()),
			tf6server.WithDebug(ctx, reattach, closed),
			// The provider's logs go where terraform-plugin-testing sends
			// them (TF_LOG, TF_LOG_PATH), and go-plugin's nowhere.
			tf6server.WithLoggingSink(t),
			tf6server.WithGoPluginLogger(hclog.NewNullLogger()))
	}()
	var rc *plugin.ReattachConfig
	select {
	case rc = <-reattach:
	case err := <-served:
		cancel()
		t.Fatalf("serving the provider: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		<-closed
	})
	return tfexec.ReattachInfo{providerAddress: tfexec.ReattachConfig{
		Protocol:        string(rc.Protocol),
		ProtocolVersion: rc.ProtocolVersion,
		Pid:             rc.Pid,
		Test:            rc.Test,
		Addr:            tfexec.ReattachConfigAddr{Network: rc.Addr.Network(), String: rc.Addr.String()},
	}}
}

// terraformInit writes config (provider block and resources) into a
// directory of its own, serves this provider in-process, and runs
// `terraform init`; it returns the CLI and the option that reattaches
// each command to the served provider.
func terraformInit(t *testing.T, config string) (*tfexec.Terraform, *tfexec.ReattachOption) {
	t.Helper()
	dir := t.TempDir()
	main := "terraform {\n  required_providers {\n    gpu = { source = \"" + providerAddress + "\" }\n  }\n}\n" + config
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o600))
	tf, err := tfexec.NewTerraform(dir, os.Getenv("TF_ACC_TERRAFORM_PATH"))
	require.NoError(t, err)
	reattach := tfexec.Reattach(servedProvider(t))
	require.NoError(t, tf.Init(context.Background(), reattach))
	return tf, reattach
}

// terraformPlan runs `terraform init` and `terraform plan -json` on config
// (provider block and resources) in a directory of its own, and returns the
// plan's diagnostics. The plan must succeed.
func terraformPlan(t *testing.T, config string) []planDiagnostic {
	t.Helper()
	ctx := context.Background()
	tf, reattach := terraformInit(t, config)
	var out bytes.Buffer
	_, err := tf.PlanJSON(ctx, &out, reattach)
	require.NoError(t, err, "terraform plan failed:\n%s", out.String())
	var diags []planDiagnostic
	lines := bufio.NewScanner(&out)
	lines.Buffer(nil, 16<<20)
	for lines.Scan() {
		var msg struct {
			Type       string          `json:"type"`
			Diagnostic *planDiagnostic `json:"diagnostic"`
		}
		require.NoError(t, json.Unmarshal(lines.Bytes(), &msg), lines.Text())
		if msg.Type == "diagnostic" && msg.Diagnostic != nil {
			diags = append(diags, *msg.Diagnostic)
		}
	}
	require.NoError(t, lines.Err())
	return diags
}
