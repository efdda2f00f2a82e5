package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-exec/tfexec"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/gpuinfra/terraform-provider-gpu/internal/proxmox"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/pveemu"
)

// The Proxmox guide's privilege table and pveum commands are rendered from
// internal/proxmox/privileges.go, their one home, between markers in
// templates/guides/proxmox.md.tmpl. GPU_UPDATE_DOCS=1 rewrites them there
// (then `make generate`); otherwise a difference fails.

const proxmoxGuideTemplate = "../../templates/guides/proxmox.md.tmpl"

// proxmoxGuideOptions are the storages and bridges the guide's commands name.
var proxmoxGuideOptions = proxmox.RoleOptions{Storages: []string{"local-lvm"}, Bridges: []string{"vmbr0"}, Mappings: true}

// proxmoxGuideSections are the generated sections: marker name -> text.
func proxmoxGuideSections() map[string]string {
	var table strings.Builder
	table.WriteString("| ACL path | privileges | PVE | for | checked by |\n|---|---|---|---|---|\n")
	for _, p := range proxmox.Privileges {
		version := "8, 9"
		if p.PVE != "" {
			version = p.PVE
		}
		fmt.Fprintf(&table, "| `%s` | `%s` | %s | %s | %s |\n", p.Path, strings.Join(p.Privs, "`, `"), version, p.Why, p.Source)
	}
	commands := func(major int) string {
		return "```sh\n" + strings.Join(proxmox.PveumCommands(major, "terraform@pve", "gpu", proxmoxGuideOptions), "\n") + "\n```\n"
	}
	return map[string]string{"privileges": table.String(), "pveum 9": commands(9), "pveum 8": commands(8)}
}

var proxmoxGuideMarker = regexp.MustCompile(`(?s)(<!-- ([a-z0-9 ]+): generated from [^\n]*-->\n)(.*?)(<!-- end ([a-z0-9 ]+) -->)`)

func TestProxmoxGuideFollowsPrivileges(t *testing.T) {
	raw, err := os.ReadFile(proxmoxGuideTemplate)
	require.NoError(t, err)
	want := proxmoxGuideSections()
	seen := map[string]bool{}
	updated := proxmoxGuideMarker.ReplaceAllStringFunc(string(raw), func(block string) string {
		m := proxmoxGuideMarker.FindStringSubmatch(block)
		require.Equal(t, m[2], m[5], "markers pair up")
		text, ok := want[m[2]]
		require.True(t, ok, "no generated section %q", m[2])
		seen[m[2]] = true
		return m[1] + "\n" + text + "\n" + m[4]
	})
	require.Len(t, seen, len(want), "the guide has every generated section")
	if os.Getenv("GPU_UPDATE_DOCS") == "1" {
		require.NoError(t, os.WriteFile(proxmoxGuideTemplate, []byte(updated), 0o600))
		return
	}
	require.Equal(t, updated, string(raw), "the guide's privileges differ from internal/proxmox/privileges.go: run GPU_UPDATE_DOCS=1 go test -run TestProxmoxGuideFollowsPrivileges ./internal/provider/, then make generate")

	docs, err := os.ReadFile("../../docs/guides/proxmox.md")
	require.NoError(t, err)
	for name, text := range want {
		require.Contains(t, string(docs), text, "docs/guides/proxmox.md is generated from the template: run make generate (%s)", name)
	}
}

// The guide's two-alias example is the one the credentials error shows.
func TestProxmoxTwoAliasExampleIsTheOneTheErrorShows(t *testing.T) {
	example := normalizeHCL(readExample(t, "examples", "provider", "proxmox-two-aliases.tf"))
	shown := proxmoxTwoAliases[:strings.Index(proxmoxTwoAliases, "\nresource ")]
	for _, block := range strings.Split(shown, "\n\n") {
		require.Contains(t, example, normalizeHCL(block))
	}
	require.Contains(t, example, "provider = gpu.root")
}

func normalizeHCL(s string) string { return strings.Join(strings.Fields(s), " ") }

// Every proxmox block of the provider examples follows the credentials rule.
func TestProviderExamplesSetATokenOrAPasswordPerBlock(t *testing.T) {
	files, err := filepath.Glob("../../examples/provider/*.tf")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	block := regexp.MustCompile(`(?s)proxmox \{.*?\n  \}`)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, b := range block.FindAllString(string(raw), -1) {
			require.False(t, strings.Contains(b, "api_token") && strings.Contains(b, "password"), "%s: %s", f, b)
		}
	}
}

const proxmoxUserData = "../../examples/bootstrap/proxmox-cloud-init/user-data.yaml"

// The example user data replaces what PVE builds from ciuser and sshkeys, so
// it adds the keys itself, and it installs the guest agent that ipv4 needs.
func TestProxmoxUserDataAddsTheKeysAndTheGuestAgent(t *testing.T) {
	raw, err := os.ReadFile(proxmoxUserData)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(raw), "#cloud-config\n"))
	var doc struct {
		Users             []any    `json:"users"`
		SSHAuthorizedKeys []string `json:"ssh_authorized_keys"`
		Packages          []string `json:"packages"`
		Runcmd            []string `json:"runcmd"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	require.Contains(t, doc.Users, "default")
	require.NotEmpty(t, doc.SSHAuthorizedKeys)
	require.Contains(t, doc.Packages, "qemu-guest-agent")
	start := slices.Index(doc.Runcmd, "systemctl start qemu-guest-agent")
	require.GreaterOrEqual(t, start, 0, "the agent is started")
	apply := slices.IndexFunc(doc.Runcmd, func(c string) bool { return strings.Contains(c, "gpu-bootstrap apply") })
	require.Less(t, start, apply, "the agent starts before the driver's install, which may fail")
}

// The example user data stops before the driver's install when Secure Boot
// is on and no DKMS key is enrolled (the modules could not load), and goes
// on when it is off or the key is enrolled. mokutil is a stand-in printing
// what mokutil prints (mokutil.c: sb_state, test_key).
func TestProxmoxUserDataSecureBootCheck(t *testing.T) {
	raw, err := os.ReadFile(proxmoxUserData)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)\n( *)# --- secure boot check \(begin\) ---\n(.*?)# --- secure boot check \(end\) ---`).FindStringSubmatch(string(raw))
	require.NotNil(t, m, "the user data has the secure boot check between its markers")
	lines := strings.Split(m[2], "\n")
	for i := range lines {
		lines[i] = strings.TrimPrefix(lines[i], m[1])
	}
	block := strings.Join(lines, "\n")
	for _, c := range []struct {
		description, sbState string
		enrolledKey          bool
		wantStop             bool
	}{
		{"Secure Boot off goes on", "SecureBoot disabled", false, false},
		{"Secure Boot on without an enrolled key stops", "SecureBoot enabled", false, true},
		{"Secure Boot on with DKMS's key enrolled goes on", "SecureBoot enabled", true, false},
	} {
		t.Run(c.description, func(t *testing.T) {
			dir := t.TempDir()
			key := filepath.Join(dir, "MOK.der")
			require.NoError(t, os.WriteFile(key, []byte("key"), 0o600))
			testKey := "is not enrolled"
			if c.enrolledKey {
				testKey = "is already enrolled"
			}
			mokutil := fmt.Sprintf("#!/bin/sh\ncase \"$1\" in\n--sb-state) echo %q ;;\n--test-key) echo \"$2 %s\" ;;\nesac\n", c.sbState, testKey)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "mokutil"), []byte(mokutil), 0o700)) //nolint:gosec // a test's stand-in executable
			script := strings.ReplaceAll(block, "/var/lib/shim-signed/mok/MOK.der", key) + "\necho went on\n"
			cmd := exec.Command("sh", "-eu", "-c", script)
			cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if c.wantStop {
				require.Error(t, err)
				require.Contains(t, string(out), "Secure Boot is on and no DKMS signing key (MOK) is enrolled")
				require.NotContains(t, string(out), "went on")
				return
			}
			require.NoError(t, err, string(out))
			require.Contains(t, string(out), "went on")
		})
	}
}

// The two-alias example applies and destroys: the mapped GPU with the token,
// the raw address with root@pam's password. Terraform runs a provider
// process per provider block only for a provider it starts itself (a
// reattached in-process one, as terraform-plugin-testing serves, gets every
// block's configuration in turn and keeps the last), so this builds the
// provider and points Terraform at it with dev_overrides.
func TestAccProxmoxTwoAliasExampleApplies(t *testing.T) {
	testAccPreCheck(t)
	ctx := context.Background()
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "terraform-provider-gpu"), "../..")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	rc := filepath.Join(t.TempDir(), "terraformrc")
	require.NoError(t, os.WriteFile(rc, []byte(fmt.Sprintf("provider_installation {\n  dev_overrides {\n    %q = %q\n  }\n  direct {}\n}\n", providerAddress, bin)), 0o600))

	dir := t.TempDir()
	example := strings.ReplaceAll(readExample(t, "examples", "provider", "proxmox-two-aliases.tf"), "https://pve.example.com:8006/api2/json", pve.URL())
	main := "terraform {\n  required_providers {\n    gpu = { source = \"" + providerAddress + "\" }\n  }\n}\n" + example
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o600))
	tf, err := tfexec.NewTerraform(dir, os.Getenv("TF_ACC_TERRAFORM_PATH"))
	require.NoError(t, err)
	env := map[string]string{"TF_CLI_CONFIG_FILE": rc, "CHECKPOINT_DISABLE": "1"}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if _, set := env[k]; !set && !strings.HasPrefix(k, "TF_") {
			env[k] = v
		}
	}
	require.NoError(t, tf.SetEnv(env))
	vars := []string{"proxmox_api_token_secret=" + pveemu.TokenSecret, "proxmox_root_password=" + pveemu.RootPassword}
	applyVars := []tfexec.ApplyOption{}
	destroyVars := []tfexec.DestroyOption{}
	for _, v := range vars {
		applyVars = append(applyVars, tfexec.Var(v))
		destroyVars = append(destroyVars, tfexec.Var(v))
	}
	require.NoError(t, tf.Apply(ctx, applyVars...))
	t.Cleanup(func() { require.NoError(t, tf.Destroy(ctx, destroyVars...)) })
	state, err := tf.Show(ctx)
	require.NoError(t, err)
	require.NotNil(t, state.Values)
	status := map[string]any{}
	for _, r := range state.Values.RootModule.Resources {
		status[r.Address] = r.AttributeValues["status"]
	}
	require.Equal(t, map[string]any{"gpu_passthrough_vm.by_mapping": "running", "gpu_passthrough_vm.by_address": "running"}, status)
}
