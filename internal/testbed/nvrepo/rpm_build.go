package nvrepo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
)

// This file turns RPMPackage values into real, signed .rpm files with
// rpmbuild and rpmsign (Debian's rpm package ships both), and a directory
// of them into dnf repository metadata with createrepo_c, plus a
// modules.yaml added with modifyrepo_c when the repository has module
// streams — the tools and steps of NVIDIA's own repository scripts
// (NVIDIA/cuda-repo-management repo-rpm.sh and its README: createrepo_c,
// then genmodules.py's modules.yaml through modifyrepo_c).

// RPMPackage is one package of a model rpm repository. Epoch, Version and
// Release make its EVR; Files are the few marker files it installs (path
// in the root -> content).
type RPMPackage struct {
	Name      string
	Epoch     int
	Version   string
	Release   string
	Arch      string // "x86_64" or "noarch"
	Requires  []string
	Provides  []string
	Conflicts []string
	Files     map[string]string
	Summary   string
}

// NEVRA is the package as dnf's modules.yaml artifacts spell it:
// name-epoch:version-release.arch.
func (p RPMPackage) NEVRA() string {
	return fmt.Sprintf("%s-%d:%s-%s.%s", p.Name, p.Epoch, p.Version, p.Release, p.Arch)
}

// FileName is the .rpm's name, as rpmbuild writes it.
func (p RPMPackage) FileName() string {
	return fmt.Sprintf("%s-%s-%s.%s.rpm", p.Name, p.Version, p.Release, p.Arch)
}

// rpmSpecTemplate is one spec per package: rpmbuild's %files needs no
// build, so a package is its header and its marker files.
var rpmSpecTemplate = template.Must(template.New("spec").Parse(`Name: {{.Name}}
{{if .Epoch}}Epoch: {{.Epoch}}
{{end}}Version: {{.Version}}
Release: {{.Release}}
Summary: {{.Summary}}
License: MIT
BuildArch: {{.Arch}}
AutoReqProv: no
{{range .Requires}}Requires: {{.}}
{{end}}{{range .Provides}}Provides: {{.}}
{{end}}{{range .Conflicts}}Conflicts: {{.}}
{{end}}
%description
Model of {{.Name}} for gpu-bootstrap's tests: marker files only.

%install
{{range $path, $content := .Files}}mkdir -p "%{buildroot}$(dirname '{{$path}}')"
cat > "%{buildroot}{{$path}}" <<'NVREPO_EOF'
{{$content}}
NVREPO_EOF
{{end}}
%files
{{range $path, $content := .Files}}{{$path}}
{{end}}`))

// buildRPMs builds pkgs into dir (flat, as NVIDIA's repositories keep them)
// and signs them with signer.
func buildRPMs(ctx context.Context, pkgs []RPMPackage, dir string, signer *rpmSigner) error {
	top, err := os.MkdirTemp(filepath.Dir(dir), ".rpmbuild-") // beside dir, so the rename stays on one file system
	if err != nil {
		return err
	}
	defer os.RemoveAll(top)
	var built []string
	for _, p := range pkgs {
		if p.Summary == "" {
			p.Summary = "model of " + p.Name
		}
		for path, content := range p.Files {
			if strings.ContainsAny(path, "'\n%") || strings.Contains(content, "%") || strings.Contains(content, "NVREPO_EOF") {
				return fmt.Errorf("nvrepo: %s: marker file %s: no %% (rpm macros) in model files, no quotes in their paths", p.Name, path)
			}
		}
		var spec bytes.Buffer
		if err := rpmSpecTemplate.Execute(&spec, p); err != nil {
			return err
		}
		specPath := filepath.Join(top, p.Name+"-"+p.Version+".spec")
		if err := os.WriteFile(specPath, spec.Bytes(), 0o644); err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, "rpmbuild", "-bb", "--quiet",
			"--define", "_topdir "+top,
			// gzip payloads: every rpm reads them, and they build fast.
			"--define", "_binary_payload w6.gzdio",
			specPath)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("nvrepo: rpmbuild %s: %w: %s", p.NEVRA(), err, out)
		}
		// rpmbuild writes RPMS/<arch>/<name>-<version>-<release>.<arch>.rpm.
		dest := filepath.Join(dir, p.FileName())
		if err := os.Rename(filepath.Join(top, "RPMS", p.Arch, p.FileName()), dest); err != nil {
			return fmt.Errorf("nvrepo: rpmbuild %s: %w", p.NEVRA(), err)
		}
		built = append(built, dest)
	}
	return signer.sign(ctx, built)
}

// indexRPMRepo writes dir's repodata with createrepo_c and, when modules
// is not empty, adds it as the modules metadata with modifyrepo_c.
func indexRPMRepo(ctx context.Context, dir string, modules []byte) error {
	if out, err := exec.CommandContext(ctx, "createrepo_c", "--quiet", "--update", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("nvrepo: createrepo_c %s: %w: %s", dir, err, out)
	}
	if len(modules) == 0 {
		return nil
	}
	work, err := os.MkdirTemp("", "nvrepo-modules-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	path := filepath.Join(work, "modules.yaml")
	if err := os.WriteFile(path, modules, 0o644); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "modifyrepo_c", "--mdtype=modules", path, filepath.Join(dir, "repodata")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("nvrepo: modifyrepo_c modules.yaml into %s: %w: %s", dir, err, out)
	}
	return nil
}

// rpmToolsMissing names the host tools the rpm model needs and lacks.
func rpmToolsMissing() []string {
	var missing []string
	for _, tool := range []string{"rpmbuild", "rpmsign", "createrepo_c", "modifyrepo_c", "gpg", "gpgconf"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	sort.Strings(missing)
	return missing
}
