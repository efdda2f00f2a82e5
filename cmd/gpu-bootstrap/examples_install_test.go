package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// The examples install a released gpu-bootstrap: the user-data examples
// inline (between the "install gpu-bootstrap" markers), the Packer templates
// through examples/bootstrap/install-gpu-bootstrap.sh. These tests run that
// shell text as written, against a local server laid out as the GitHub
// release (.goreleaser.yml's names), with only the release URL, the version
// and the install path swapped for the test's.

const (
	releasesURL     = "https://github.com/gpuinfra/terraform-provider-gpu/releases/download"
	exampleVersion  = "0.1.0"
	exampleBinary   = "/usr/local/bin/gpu-bootstrap"
	testVersion     = "9.8.7"
	installBegin    = "# --- install gpu-bootstrap (begin) ---"
	installEnd      = "# --- install gpu-bootstrap (end) ---"
	installerScript = "../../examples/bootstrap/install-gpu-bootstrap.sh"
)

// fakeRelease serves v<testVersion>/ with a tar.gz per architecture (its
// gpu-bootstrap is a script that prints the architecture) and the
// SHA256SUMS over them, as a release has them. sums edits the SHA256SUMS
// text before it is served; sign, when given, makes its .sig.
func fakeRelease(t *testing.T, sums func(string) string, sign func([]byte) []byte) (url string) {
	t.Helper()
	files := map[string][]byte{}
	var list strings.Builder
	for _, arch := range []string{"amd64", "arm64"} {
		name := fmt.Sprintf("gpu-bootstrap_%s_linux_%s.tar.gz", testVersion, arch)
		files[name] = tarGz(t, "gpu-bootstrap", "#!/bin/sh\necho gpu-bootstrap "+testVersion+" "+arch+"\n")
		fmt.Fprintf(&list, "%x  %s\n", sha256.Sum256(files[name]), name)
	}
	fmt.Fprintf(&list, "%x  terraform-provider-gpu_%s_linux_amd64.zip\n", sha256.Sum256([]byte("zip")), testVersion)
	text := list.String()
	if sums != nil {
		text = sums(text)
	}
	sumsName := fmt.Sprintf("terraform-provider-gpu_%s_SHA256SUMS", testVersion)
	files[sumsName] = []byte(text)
	if sign != nil {
		files[sumsName+".sig"] = sign(files[sumsName])
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, "/v"+testVersion+"/")
		data, found := files[name]
		if !ok || !found {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func tarGz(t *testing.T, name, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, content string }{{"LICENSE", "MPL-2.0\n"}, {name, content}} {
		must(t, tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o755, Size: int64(len(f.content))}))
		_, err := tw.Write([]byte(f.content))
		must(t, err)
	}
	must(t, tw.Close())
	must(t, gz.Close())
	return buf.Bytes()
}

// needTools fails (GPU_TESTBED_REQUIRED=1 or CI) or skips when the tools the
// examples' install steps use are missing.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("%s not found: the examples' install steps need it (Debian: apt-get install curl coreutils tar gnupg)", tool)
			if testbed.Required() {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

// inlineInstallBlocks returns, per example file, the shell text between the
// install markers, with the indentation a YAML block gives it removed.
func inlineInstallBlocks(t *testing.T) map[string]string {
	t.Helper()
	blocks := map[string]string{}
	marked := regexp.MustCompile(`(?s)\n([ \t]*)` + regexp.QuoteMeta(installBegin) + `\n(.*?)\n[ \t]*` + regexp.QuoteMeta(installEnd) + `\n`)
	err := filepath.WalkDir("../../examples", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		m := marked.FindStringSubmatch(string(data))
		if m == nil {
			return nil
		}
		lines := strings.Split(m[2], "\n")
		for i, line := range lines {
			lines[i] = strings.TrimPrefix(line, m[1])
		}
		blocks[path] = strings.Join(lines, "\n") + "\n"
		return nil
	})
	must(t, err)
	return blocks
}

// TestUserDataExamplesInstallTheReleasedBinary: the EC2 user data (plain and
// EKS) and the Proxmox cloud-init download the tar.gz of the machine's
// architecture, check it against SHA256SUMS, and install it; a tar.gz whose
// checksum does not match, or that SHA256SUMS does not list, is not
// installed and fails the script.
func TestUserDataExamplesInstallTheReleasedBinary(t *testing.T) {
	needTools(t, "sh", "curl", "sha256sum", "tar", "grep", "install", "mktemp")
	blocks := inlineInstallBlocks(t)
	for _, want := range []string{"ec2-user-data/plain-ec2-user-data.sh", "ec2-user-data/eks-node-user-data.mime", "proxmox-cloud-init/user-data.yaml"} {
		if _, ok := blocks[filepath.Join("../../examples/bootstrap", want)]; !ok {
			t.Errorf("examples/bootstrap/%s has no %q ... %q block", want, installBegin, installEnd)
		}
	}

	for path, block := range blocks {
		for _, c := range []struct {
			description string
			machine     string // what uname -m prints
			sums        func(string) string
			wantArch    string // "" = the install must fail
			wantErr     string
		}{
			{description: "an x86_64 machine gets the amd64 tar.gz", machine: "x86_64", wantArch: "amd64"},
			{description: "an aarch64 machine (Graviton, Grace) gets the arm64 tar.gz", machine: "aarch64", wantArch: "arm64"},
			{description: "a tar.gz whose SHA-256 differs from SHA256SUMS is refused", machine: "x86_64",
				sums: func(s string) string {
					return regexp.MustCompile(`(?m)^[0-9a-f]{64}(  gpu-bootstrap_\S+_amd64)`).ReplaceAllString(s, strings.Repeat("0", 64)+"$1")
				},
				wantErr: "FAILED"},
			{description: "a tar.gz that SHA256SUMS does not list is refused", machine: "aarch64",
				sums: func(s string) string { return regexp.MustCompile(`(?m)^.*_arm64\.tar\.gz\n`).ReplaceAllString(s, "") }},
			{description: "an architecture without a release is refused", machine: "riscv64", wantErr: "no gpu-bootstrap release for riscv64"},
		} {
			t.Run(filepath.Base(path)+"/"+c.description, func(t *testing.T) {
				url := fakeRelease(t, c.sums, nil)
				dir := t.TempDir()
				bin := filepath.Join(dir, "usr/local/bin/gpu-bootstrap")
				script := strings.NewReplacer(
					releasesURL, url,
					`GPU_BOOTSTRAP_VERSION="`+exampleVersion+`"`, `GPU_BOOTSTRAP_VERSION="`+testVersion+`"`,
					exampleBinary, bin,
				).Replace(block)
				if strings.Count(script, url) != 1 || !strings.Contains(script, testVersion) || !strings.Contains(script, bin) {
					t.Fatalf("the block does not name the release URL %s, version %q and %s once each as written:\n%s", releasesURL, exampleVersion, exampleBinary, block)
				}
				out, err := runSh(t, dir, c.machine, nil, "-eu", "-c", script)
				if c.wantArch == "" {
					if err == nil {
						t.Fatalf("the install succeeded, want a failure:\n%s", out)
					}
					if !strings.Contains(out, c.wantErr) {
						t.Errorf("the failure does not say %q:\n%s", c.wantErr, out)
					}
					if _, err := os.Stat(bin); err == nil {
						t.Errorf("%s was installed although the check failed", bin)
					}
					return
				}
				if err != nil {
					t.Fatalf("install: %v\n%s", err, out)
				}
				got, err := exec.Command(bin).Output()
				if err != nil || string(got) != "gpu-bootstrap "+testVersion+" "+c.wantArch+"\n" {
					t.Errorf("installed binary prints %q (%v), want the %s release's", got, err, c.wantArch)
				}
			})
		}
	}
}

// TestInstallScriptInstallsTheReleasedBinary: the script the Packer templates
// run takes the architecture from GPU_BOOTSTRAP_ARCH (the template's
// variable) or uname -m, refuses a bad checksum, and with GPU_BOOTSTRAP_GPG_KEY
// accepts only a SHA256SUMS signed by that key.
func TestInstallScriptInstallsTheReleasedBinary(t *testing.T) {
	needTools(t, "sh", "curl", "sha256sum", "tar", "grep", "install", "mktemp")
	for _, c := range []struct {
		description string
		env         map[string]string
		machine     string
		sums        func(string) string
		wantArch    string
		wantErr     string
	}{
		{description: "GPU_BOOTSTRAP_ARCH=arm64 on an x86_64 build host", env: map[string]string{"GPU_BOOTSTRAP_ARCH": "arm64"}, machine: "x86_64", wantArch: "arm64"},
		{description: "uname -m aarch64", machine: "aarch64", wantArch: "arm64"},
		{description: "a version given with its tag's v", env: map[string]string{"GPU_BOOTSTRAP_VERSION": "v" + testVersion}, machine: "x86_64", wantArch: "amd64"},
		{description: "an unknown GPU_BOOTSTRAP_ARCH", env: map[string]string{"GPU_BOOTSTRAP_ARCH": "386"}, machine: "x86_64", wantErr: "GPU_BOOTSTRAP_ARCH=386: want amd64 or arm64"},
		{description: "no version", env: map[string]string{"GPU_BOOTSTRAP_VERSION": ""}, machine: "x86_64", wantErr: "set GPU_BOOTSTRAP_VERSION"},
		{description: "a bad checksum", machine: "x86_64",
			sums: func(s string) string {
				return regexp.MustCompile(`(?m)^[0-9a-f]{64}(  gpu-bootstrap_\S+_amd64)`).ReplaceAllString(s, strings.Repeat("1", 64)+"$1")
			},
			wantErr: "FAILED"},
		{description: "no line for the tar.gz", machine: "x86_64",
			sums:    func(s string) string { return regexp.MustCompile(`(?m)^.*_amd64\.tar\.gz\n`).ReplaceAllString(s, "") },
			wantErr: "has no line for gpu-bootstrap_" + testVersion + "_linux_amd64.tar.gz"},
	} {
		t.Run(c.description, func(t *testing.T) {
			url := fakeRelease(t, c.sums, nil)
			dir := t.TempDir()
			bin := filepath.Join(dir, "bin/gpu-bootstrap")
			env := map[string]string{"GPU_BOOTSTRAP_VERSION": testVersion, "GPU_BOOTSTRAP_RELEASES": url, "GPU_BOOTSTRAP_BIN": bin}
			for k, v := range c.env {
				env[k] = v
			}
			out, err := runSh(t, dir, c.machine, env, installerPath(t))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(out, c.wantErr) {
					t.Fatalf("want a failure saying %q, got %v:\n%s", c.wantErr, err, out)
				}
				if _, err := os.Stat(bin); err == nil {
					t.Errorf("%s was installed although the install failed", bin)
				}
				return
			}
			if err != nil {
				t.Fatalf("install: %v\n%s", err, out)
			}
			if !strings.Contains(out, "gpu-bootstrap "+testVersion+" "+c.wantArch) {
				t.Errorf("the script did not run the installed %s binary:\n%s", c.wantArch, out)
			}
		})
	}
}

// The release signs SHA256SUMS as .goreleaser.yml's signs: block does
// (gpg --detach-sign, a binary .sig); the script verifies it with gpgv
// against the key in GPU_BOOTSTRAP_GPG_KEY.
func TestInstallScriptVerifiesTheSignatureWithTheGivenKey(t *testing.T) {
	needTools(t, "sh", "curl", "sha256sum", "tar", "grep", "install", "mktemp", "gpg", "gpgv", "gpgconf")
	release := newGPGKey(t, "release")
	other := newGPGKey(t, "other")
	for _, c := range []struct {
		description string
		signer      *gpgKey
		trusted     *gpgKey
		wantErr     string
	}{
		{description: "signed by the given key", signer: release, trusted: release},
		{description: "signed by another key", signer: other, trusted: release, wantErr: "the signature of terraform-provider-gpu_" + testVersion + "_SHA256SUMS does not verify"},
	} {
		t.Run(c.description, func(t *testing.T) {
			url := fakeRelease(t, nil, c.signer.sign)
			dir := t.TempDir()
			keyFile := filepath.Join(dir, "release-key.asc")
			must(t, os.WriteFile(keyFile, c.trusted.public, 0o644))
			bin := filepath.Join(dir, "bin/gpu-bootstrap")
			out, err := runSh(t, dir, "x86_64", map[string]string{
				"GPU_BOOTSTRAP_VERSION": testVersion, "GPU_BOOTSTRAP_RELEASES": url, "GPU_BOOTSTRAP_BIN": bin, "GPU_BOOTSTRAP_GPG_KEY": keyFile,
			}, installerPath(t))
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("install: %v\n%s", err, out)
				}
				return
			}
			if err == nil || !strings.Contains(out, c.wantErr) {
				t.Fatalf("want a failure saying %q, got %v:\n%s", c.wantErr, err, out)
			}
			if _, err := os.Stat(bin); err == nil {
				t.Errorf("%s was installed although the signature did not verify", bin)
			}
		})
	}
}

type gpgKey struct {
	t      *testing.T
	home   string
	public []byte // ASCII-armored
}

// newGPGKey makes an ed25519 signing key in a GnuPG home of its own, and
// stops the gpg-agent that gpg starts for it when the test ends.
func newGPGKey(t *testing.T, name string) *gpgKey {
	t.Helper()
	home := t.TempDir()
	must(t, os.Chmod(home, 0o700))
	k := &gpgKey{t: t, home: home}
	t.Cleanup(func() { _ = exec.Command("gpgconf", "--homedir", home, "--kill", "gpg-agent").Run() })
	k.gpg("--passphrase", "", "--quick-gen-key", name+" <"+name+"@example.com>", "ed25519", "sign", "never")
	k.public = k.gpg("--armor", "--export")
	return k
}

func (k *gpgKey) gpg(args ...string) []byte {
	k.t.Helper()
	cmd := exec.Command("gpg", append([]string{"--homedir", k.home, "--batch", "--pinentry-mode", "loopback"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		k.t.Fatalf("gpg %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

func (k *gpgKey) sign(data []byte) []byte {
	k.t.Helper()
	file := filepath.Join(k.home, "sums")
	must(k.t, os.WriteFile(file, data, 0o644))
	k.gpg("--passphrase", "", "--output", file+".sig", "--detach-sign", file)
	sig, err := os.ReadFile(file + ".sig")
	must(k.t, err)
	must(k.t, os.Remove(file+".sig"))
	return sig
}

func installerPath(t *testing.T) string {
	t.Helper()
	path, err := filepath.Abs(installerScript)
	must(t, err)
	return path
}

// runSh runs sh with args in dir, with a uname that prints machine for -m
// ahead of PATH, and env added to a minimal environment.
func runSh(t *testing.T, dir, machine string, env map[string]string, args ...string) (string, error) {
	t.Helper()
	fakeBin := filepath.Join(dir, "fakebin")
	must(t, os.MkdirAll(fakeBin, 0o755))
	must(t, os.WriteFile(filepath.Join(fakeBin, "uname"), []byte("#!/bin/sh\n[ \"$1\" = -m ] && { echo "+machine+"; exit 0; }\nexec /bin/uname \"$@\"\n"), 0o755))
	cmd := exec.Command("sh", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + fakeBin + ":" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}
