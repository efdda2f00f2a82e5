package nvrepo

import (
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCUDARPMRepoIsSignedIndexedAndStreamed(t *testing.T) {
	repo := BuildCUDARPM(t, CUDARPMOptions{Distro: "rhel9"})
	dir := repo.Dir()

	for _, name := range []string{"cuda-rhel9.repo", rpmKeyFileName, "repodata/repomd.xml",
		"nvidia-open-580.105.08-1.el9.noarch.rpm", "nvidia-driver-NVML-550.163.01-1.el9.x86_64.rpm", "libnvidia-ml-580.95.05-1.el9.x86_64.rpm"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("the model lacks %s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nvidia-open-550.163.01-1.el9.noarch.rpm")); err == nil {
		t.Error("branch 550 has nvidia-open; the model gives it to 560 and later only")
	}

	// The signature verifies against the served key, and only against it.
	db := t.TempDir()
	rpmCmd := func(args ...string) (string, error) {
		out, err := exec.Command("rpm", append([]string{"--dbpath", db}, args...)...).CombinedOutput()
		return string(out), err
	}
	pkg := filepath.Join(dir, "kmod-nvidia-open-dkms-580.95.05-1.el9.x86_64.rpm")
	if out, err := rpmCmd("-K", pkg); err == nil {
		t.Errorf("rpm -K without the key passed: %s", out)
	}
	if out, err := rpmCmd("--import", filepath.Join(dir, rpmKeyFileName)); err != nil {
		t.Fatalf("importing the key: %v: %s", err, out)
	}
	if out, err := rpmCmd("-K", pkg); err != nil || !strings.Contains(out, "signatures OK") {
		t.Errorf("rpm -K with the key: %v: %s", err, out)
	}

	// The metapackages' dependencies are unbounded; the kernel module
	// provides nvidia-kmod at its EVR and conflicts with the other flavor.
	out, err := rpmCmd("-qp", "--requires", filepath.Join(dir, "nvidia-open-580.95.05-1.el9.noarch.rpm"))
	if err != nil || !strings.Contains(out, "kmod-nvidia-open-dkms >= 3:580.95.05") {
		t.Errorf("nvidia-open requires: %v: %s", err, out)
	}
	out, err = rpmCmd("-qp", "--provides", "--conflicts", pkg)
	if err != nil || !strings.Contains(out, "nvidia-kmod = 3:580.95.05") || !strings.Contains(out, "kmod-nvidia-latest-dkms") {
		t.Errorf("kmod-nvidia-open-dkms provides/conflicts: %v: %s", err, out)
	}

	modules := readModulesYAML(t, dir)
	for _, stream := range []string{"stream: 550-dkms", "stream: 550-open", "stream: 570-open", "stream: 580-dkms", "stream: 580-open", "stream: latest-dkms", "stream: open-dkms"} {
		if !strings.Contains(modules, stream+"\n") {
			t.Errorf("modules.yaml lacks %q", stream)
		}
	}
	open580 := streamDocument(modules, "580-open")
	for _, want := range []string{"kmod-nvidia-open-dkms-3:580.95.05-1.el9.x86_64", "kmod-nvidia-open-dkms-3:580.105.08-1.el9.x86_64", "nvidia-open-3:580.105.08-1.el9.noarch"} {
		if !strings.Contains(open580, want) {
			t.Errorf("stream 580-open lacks %s:\n%s", want, open580)
		}
	}
	for _, unwanted := range []string{"570.195.03", "kmod-nvidia-latest-dkms", "cuda-drivers"} {
		if strings.Contains(open580, unwanted) {
			t.Errorf("stream 580-open carries %s:\n%s", unwanted, open580)
		}
	}
}

func TestCUDARPMRepoGainsABranch(t *testing.T) {
	repo := BuildCUDARPM(t, CUDARPMOptions{Distro: "amzn2023", Versions: []string{"580.95.05"}})
	if err := repo.AddDriverVersions("590.44.01"); err != nil {
		t.Fatal(err)
	}
	modules := readModulesYAML(t, repo.Dir())
	if !strings.Contains(streamDocument(modules, "590-open"), "nvidia-open-3:590.44.01-1.amzn2023.noarch") {
		t.Errorf("no 590-open stream after adding 590:\n%s", modules)
	}
	if !strings.Contains(streamDocument(modules, "open-dkms"), "590.44.01") {
		t.Errorf("open-dkms does not follow the new branch:\n%s", streamDocument(modules, "open-dkms"))
	}
	if strings.Contains(streamDocument(modules, "580-open"), "590") {
		t.Errorf("580-open carries 590:\n%s", streamDocument(modules, "580-open"))
	}
}

// readModulesYAML is the repository's modules metadata, uncompressed.
func readModulesYAML(t *testing.T, dir string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(dir, "repodata", "*modules.yaml.gz"))
	if len(matches) != 1 {
		t.Fatalf("repodata has %d modules.yaml.gz files, want 1", len(matches))
	}
	f, err := os.Open(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// streamDocument is the modulemd document of one stream.
func streamDocument(modules, stream string) string {
	for _, doc := range strings.Split(modules, "\n---\n") {
		if strings.Contains(doc, "stream: "+stream+"\n") {
			return doc
		}
	}
	return ""
}

func TestCUDARPMBranch620IsOpenOnly(t *testing.T) {
	var pkgs []RPMPackage
	for _, v := range []string{ProductionRelease595, LTSRelease620} {
		pkgs = append(pkgs, cudaDriverPackages(v, "el9")...)
	}
	for _, p := range pkgs {
		if rpmBranchOf(p.Version) == 620 && (p.Name == "cuda-drivers" || p.Name == "kmod-nvidia-latest-dkms") {
			t.Errorf("branch 620 has %s; NVIDIA ships no proprietary modules from 620 on", p.Name)
		}
	}
	modules := string(cudaRPMStreamsYAML(pkgs))
	for _, stream := range []string{"595-dkms", "595-open", "620-open", "latest-dkms", "open-dkms"} {
		if streamDocument(modules, stream) == "" {
			t.Errorf("no %s stream:\n%s", stream, modules)
		}
	}
	if streamDocument(modules, "620-dkms") != "" {
		t.Errorf("a 620-dkms stream:\n%s", streamDocument(modules, "620-dkms"))
	}
	if doc := streamDocument(modules, "latest-dkms"); !strings.Contains(doc, "kmod-nvidia-latest-dkms-3:"+ProductionRelease595) || strings.Contains(doc, LTSRelease620) {
		t.Errorf("latest-dkms does not follow the newest branch with the proprietary flavor (595):\n%s", doc)
	}
	if doc := streamDocument(modules, "open-dkms"); !strings.Contains(doc, "nvidia-open-3:"+LTSRelease620) {
		t.Errorf("open-dkms does not follow 620:\n%s", doc)
	}
}

func TestCUDARPMRHEL10HasNoStreams(t *testing.T) {
	repo := BuildCUDARPM(t, CUDARPMOptions{Distro: "rhel10"})
	dir := repo.Dir()
	for _, name := range []string{"cuda-rhel10.repo", rpmKeyFileName, "repodata/repomd.xml",
		"nvidia-open-" + LTSRelease580 + "-1.el10.noarch.rpm", "nvidia-open-" + ProductionRelease595 + "-1.el10.noarch.rpm",
		"kmod-nvidia-open-dkms-" + LTSRelease620 + "-1.el10.x86_64.rpm", "cuda-drivers-" + ProductionRelease595 + "-1.el10.x86_64.rpm"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("the rhel10 model lacks %s: %v", name, err)
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "repodata", "*modules.yaml*")); len(matches) != 0 {
		t.Errorf("the rhel10 model has module metadata %v; NVIDIA's guide locks RHEL 10 with versionlock, without streams", matches)
	}
	if _, err := os.Stat(filepath.Join(dir, "cuda-drivers-"+LTSRelease620+"-1.el10.x86_64.rpm")); err == nil {
		t.Error("branch 620 has cuda-drivers in the rhel10 model")
	}
}
