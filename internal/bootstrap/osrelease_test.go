package bootstrap

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// osReleaseHost is a test host whose root holds the named testdata
// os-release at /etc/os-release.
func osReleaseHost(t *testing.T, name string) (*Host, *RecordingRunner) {
	t.Helper()
	h, runner := newTestHost(t)
	data, err := os.ReadFile(filepath.Join("testdata", "osrelease", name))
	if err != nil {
		t.Fatal(err)
	}
	writeTarget(t, h, "/etc/os-release", string(data), 0o644)
	return h, runner
}

func TestClassifyOS(t *testing.T) {
	tests := []struct {
		description string
		file        string
		family      string
		id          string
		cudaRepo    string
		pretty      string
		errContains []string
	}{
		{description: "Ubuntu 22.04 installs from Ubuntu's archive", file: "ubuntu-22.04", family: familyDebian, id: "ubuntu", pretty: "Ubuntu 22.04.5 LTS"},
		{description: "Ubuntu 24.04 installs from Ubuntu's archive", file: "ubuntu-24.04", family: familyDebian, id: "ubuntu", pretty: "Ubuntu 24.04.1 LTS"},
		{description: "Debian 12 installs from NVIDIA's debian12 repository", file: "debian-12", family: familyDebian, id: "debian", cudaRepo: "debian12"},
		{description: "Debian 13 installs from NVIDIA's debian13 repository", file: "debian-13", family: familyDebian, id: "debian", cudaRepo: "debian13", pretty: "Debian GNU/Linux 13 (trixie)"},
		{description: "Amazon Linux 2023 is its own family", file: "amzn-2023", family: familyAL2023, id: "amzn", cudaRepo: "amzn2023", pretty: "Amazon Linux 2023.10.20260216"},
		{description: "RHEL 9 uses the rhel9 repository", file: "rhel-9", family: familyRHEL, id: "rhel", cudaRepo: "rhel9"},
		{description: "Rocky Linux 9 uses the rhel9 repository too", file: "rocky-9", family: familyRHEL, id: "rocky", cudaRepo: "rhel9"},
		{description: "RHEL 10 uses the rhel10 repository (locked with versionlock, not streams)", file: "rhel-10", family: familyRHEL, id: "rhel", cudaRepo: "rhel10"},
		{description: "Rocky Linux 10 uses the rhel10 repository too", file: "rocky-10", family: familyRHEL, id: "rocky", cudaRepo: "rhel10"},
		{
			description: "Amazon Linux 2 is past its end of support and says what to use instead",
			file:        "amzn-2",
			errContains: []string{"Amazon Linux 2 (ID=amzn VERSION_ID=2 in /etc/os-release) is not supported", "end of support on 2026-06-30", "Amazon Linux 2023", "Supported: Ubuntu 22.04"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			h, _ := osReleaseHost(t, tt.file)
			d, err := readDistro(h)
			if len(tt.errContains) > 0 {
				var unsupported *UnsupportedOSError
				if !errors.As(err, &unsupported) {
					t.Fatalf("err = %v, want an *UnsupportedOSError", err)
				}
				for _, want := range tt.errContains {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Family != tt.family || d.Release.ID != tt.id || d.CUDARepo != tt.cudaRepo {
				t.Errorf("got family %q id %q repo %q, want %q %q %q", d.Family, d.Release.ID, d.CUDARepo, tt.family, tt.id, tt.cudaRepo)
			}
			if tt.pretty != "" && d.Release.PrettyName != tt.pretty {
				t.Errorf("PRETTY_NAME = %q, want %q", d.Release.PrettyName, tt.pretty)
			}
		})
	}
}

func TestClassifyOSRejects(t *testing.T) {
	tests := []struct {
		description string
		release     OSRelease
		want        string
	}{
		{"Fedora is not a server target", OSRelease{ID: "fedora", VersionID: "41"}, "Fedora"},
		{"RHEL 11 is not known", OSRelease{ID: "rhel", VersionID: "11.0"}, "Supported: "},
		{"Ubuntu 20.04 is out of standard support", OSRelease{ID: "ubuntu", VersionID: "20.04"}, "LTS"},
		{"Debian 11 is not supported", OSRelease{ID: "debian", VersionID: "11"}, "Debian 12 (bookworm) and Debian 13 (trixie)"},
		{"Debian 14 is not supported before NVIDIA has a repository for it", OSRelease{ID: "debian", VersionID: "14"}, "Supported: Ubuntu 22.04, 24.04 and 26.04; Debian 12 and 13;"},
		{"an unknown distribution lists what is supported", OSRelease{ID: "arch"}, "Supported: "},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			_, err := classifyOS(tt.release)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestReadOSReleaseFallsBackToUsrLib(t *testing.T) {
	h, _ := newTestHost(t)
	writeTarget(t, h, "/usr/lib/os-release", "ID=debian\nVERSION_ID=\"12\"\n", 0o644)
	rel, err := readOSRelease(h)
	if err != nil {
		t.Fatal(err)
	}
	if rel.Path != "/usr/lib/os-release" || rel.ID != "debian" {
		t.Errorf("read %+v, want debian from /usr/lib/os-release", rel)
	}

	writeTarget(t, h, "/etc/os-release", "ID=ubuntu\nVERSION_ID=24.04\n", 0o644)
	rel, err = readOSRelease(h)
	if err != nil {
		t.Fatal(err)
	}
	if rel.Path != "/etc/os-release" || rel.ID != "ubuntu" {
		t.Errorf("read %+v, want /etc/os-release to take precedence", rel)
	}
}

func TestReadOSReleaseMissing(t *testing.T) {
	h, _ := newTestHost(t)
	_, err := readOSRelease(h)
	if err == nil || !strings.Contains(err.Error(), "/etc/os-release") || !strings.Contains(err.Error(), "/usr/lib/os-release") {
		t.Errorf("err = %v, want it to name both files", err)
	}
}

func TestParseOSReleaseQuoting(t *testing.T) {
	data := "# comment\n\nID='my distro'\nID_LIKE=\"rhel  centos\"\nPRETTY_NAME=\"Say \\\"hi\\\" \\$HOME\"\nVERSION_ID=9.4 \n"
	rel, err := parseOSRelease("/etc/os-release", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if rel.ID != "my distro" || rel.PrettyName != `Say "hi" $HOME` || rel.VersionID != "9.4" || strings.Join(rel.IDLike, ",") != "rhel,centos" {
		t.Errorf("parsed %+v", rel)
	}
	if rel.major() != "9" {
		t.Errorf("major = %q", rel.major())
	}
}

func TestParseOSReleaseUnclosedQuote(t *testing.T) {
	_, err := parseOSRelease("/etc/os-release", []byte("ID=ubuntu\nPRETTY_NAME=\"Ubuntu 24.04\n"))
	var parseErr *ParseError
	if !errors.As(err, &parseErr) || parseErr.Line != 2 || parseErr.Path != "/etc/os-release" {
		t.Fatalf("err = %v, want a ParseError at /etc/os-release:2", err)
	}
}
