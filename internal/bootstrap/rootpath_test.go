package bootstrap

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// rootLayout builds a root from entries: a name ending in "/" is a
// directory, a value starting with "->" a symbolic link to the rest, and
// anything else a file with that content.
func rootLayout(t *testing.T, root string, entries map[string]string) {
	t.Helper()
	for name, value := range entries {
		full := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		switch {
		case strings.HasSuffix(name, "/"):
			require.NoError(t, os.MkdirAll(full, 0o755))
		case strings.HasPrefix(value, "->"):
			require.NoError(t, os.Symlink(strings.TrimPrefix(value, "->"), full))
		default:
			require.NoError(t, os.WriteFile(full, []byte(value), 0o644))
		}
	}
}

func TestResolveInRootFollowsLinksAsAChrootWould(t *testing.T) {
	outside := t.TempDir() // a directory on the build host, outside every root
	tests := []struct {
		description string
		entries     map[string]string
		path        string
		want        string
		links       int
	}{
		{"A plain path is itself.", map[string]string{"etc/app.conf": "x"}, "/etc/app.conf", "/etc/app.conf", 0},
		{"A missing file is taken as it is, to be created.", nil, "/etc/new/file.toml", "/etc/new/file.toml", 0},
		{"An absolute link resolves from the root, not from the build host.",
			map[string]string{"etc/containerd/config.toml": "->/usr/share/containerd/config.toml", "usr/share/containerd/config.toml": "x"},
			"/etc/containerd/config.toml", "/usr/share/containerd/config.toml", 1},
		{"A relative link resolves from the link's directory.",
			map[string]string{"etc/crio/crio.conf": "->../../usr/share/crio/crio.conf"},
			"/etc/crio/crio.conf", "/usr/share/crio/crio.conf", 1},
		{"A relative link with more .. than directories stops at the root.",
			map[string]string{"etc/app.conf": "->../../../../../../../etc/passwd"},
			"/etc/app.conf", "/etc/passwd", 1},
		{"An absolute link to a build-host directory stays inside the root.",
			map[string]string{"etc/app.conf": "->" + filepath.Join(outside, "app.conf")},
			"/etc/app.conf", filepath.Join(outside, "app.conf"), 1},
		{"A dangling link is followed to where its target would be created.",
			map[string]string{"etc/docker/daemon.json": "->/srv/docker/daemon.json"},
			"/etc/docker/daemon.json", "/srv/docker/daemon.json", 1},
		{"A linked directory is followed, and the rest of the path after it.",
			map[string]string{"etc/containerd": "->/opt/containerd/etc", "opt/containerd/etc/": ""},
			"/etc/containerd/conf.d/99-nvidia.toml", "/opt/containerd/etc/conf.d/99-nvidia.toml", 1},
		{"A chain of links is followed to its end.",
			map[string]string{"a": "->b", "b": "->/c", "c": "->d/e", "d/": ""},
			"/a", "/d/e", 3},
		{".. in the path stops at the root.", nil, "/../../../../tmp/x.toml", "/tmp/x.toml", 0},
		{".. after a link climbs from the link's target.",
			map[string]string{"etc/containerd": "->/opt/ctd/etc", "opt/ctd/etc/": ""},
			"/etc/containerd/../bin/runc", "/opt/ctd/bin/runc", 1},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			root := t.TempDir()
			rootLayout(t, root, tt.entries)
			got, err := resolveInRoot(root, tt.path)
			require.NoError(t, err)
			require.Equal(t, tt.want, got.InRoot)
			require.Len(t, got.Links, tt.links)
		})
	}
}

func TestResolveInRootReportsALoop(t *testing.T) {
	root := t.TempDir()
	rootLayout(t, root, map[string]string{"etc/a": "->/etc/b", "etc/b": "->a"})
	_, err := resolveInRoot(root, "/etc/a/x")
	require.ErrorContains(t, err, "symbolic links (a loop?) at /etc/")

	h := &Host{Root: root}
	_, _, err = h.ReadFile("/etc/a")
	require.ErrorContains(t, err, "a loop?", "ReadFile reports the loop rather than a missing file")
	require.False(t, h.Exists("/etc/a"))
	require.True(t, strings.HasPrefix(h.Path("/etc/a"), root+string(filepath.Separator)), "an unresolvable path still names a file under the root")
}

func TestHostPathNeverLeavesTheRoot(t *testing.T) {
	outside := t.TempDir()
	sentinel := filepath.Join(outside, "config.toml")
	require.NoError(t, os.WriteFile(sentinel, []byte("host's own\n"), 0o644))

	realRoot := t.TempDir()
	// The root is itself reached through a link, as /mnt/image -> /srv/images/a.
	linkedRoot := filepath.Join(t.TempDir(), "image")
	require.NoError(t, os.Symlink(realRoot, linkedRoot))
	rootLayout(t, realRoot, map[string]string{
		"etc/abs.toml":   "->" + sentinel,
		"etc/rel.toml":   "->../../../../../../.." + sentinel,
		"etc/dir":        "->" + outside,
		"etc/loop":       "->loop",
		"usr/lib/x.so.1": "lib",
	})
	for _, root := range []string{realRoot, linkedRoot} {
		h := &Host{Root: root}
		for _, target := range []string{"/etc/abs.toml", "/etc/rel.toml", "/etc/dir/config.toml", "/../../.." + sentinel} {
			got := h.Path(target)
			require.Equal(t, filepath.Join(root, sentinel), got, "%s under %s", target, root)
			data, exists, err := h.ReadFile(target)
			require.NoError(t, err)
			require.False(t, exists, "%s must not read the build host's %s (read %q)", target, sentinel, data)
			require.False(t, h.Exists(target))
		}
		require.Equal(t, filepath.Join(root, "etc/abs.toml"), h.linkPath("/etc/abs.toml"), "linkPath keeps the last link")
		require.True(t, h.isSymlink("/etc/abs.toml"))
	}
}

func TestGlobStaysInsideTheRoot(t *testing.T) {
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "libnvidia-ml.so.1"), []byte("host"), 0o644))
	root := t.TempDir()
	rootLayout(t, root, map[string]string{
		"lib":                    "->" + outside, // an absolute link out of the root
		"usr/lib64/libcuda.so.1": "image",
	})
	h := &Host{Root: root}
	require.Empty(t, h.glob("/lib/libnvidia-ml.so.*"), "glob must not list the build host's files through an absolute link")
	require.Equal(t, []string{"/usr/lib64/libcuda.so.1"}, h.glob("/usr/lib64/libcuda.so.*"))
}

// The image layout of the issue: the engine config is a link to a file the
// image ships. The plan reads that file, says the write goes through the
// link, and apply keeps the link and writes and backs up the image's file.
func TestApplyWritesThroughAnAbsoluteLinkInsideTheRoot(t *testing.T) {
	h, _ := newTestHost(t)
	rootLayout(t, h.Root, map[string]string{
		"etc/containerd/config.toml":       "->/usr/share/containerd/config.toml",
		"usr/share/containerd/config.toml": "image's own\n",
	})
	step := fileStep{path: "/etc/containerd/config.toml", content: "new\n"}
	plan, err := MakePlan(context.Background(), h, []Step{step})
	require.NoError(t, err)
	require.Len(t, plan, 1)
	require.Len(t, plan[0].Changes, 1)
	change := plan[0].Changes[0]
	require.Equal(t, []byte("image's own\n"), change.File().Old, "the plan reads the link's target in the image, not \"will create\"")
	require.Contains(t, change.Summary, "goes through the symbolic link /etc/containerd/config.toml -> /usr/share/containerd/config.toml; the link is kept and /usr/share/containerd/config.toml is written")

	report, err := Apply(context.Background(), h, []Step{step}, ApplyOptions{})
	require.NoError(t, err)
	dest, err := os.Readlink(filepath.Join(h.Root, "etc/containerd/config.toml"))
	require.NoError(t, err, "the link is kept")
	require.Equal(t, "/usr/share/containerd/config.toml", dest)
	require.Equal(t, "new\n", readTarget(t, h, "/usr/share/containerd/config.toml"))
	require.Equal(t, []string{"/var/backups/gpu-bootstrap/20261122T071800Z/etc/containerd/config.toml"}, report.Backups)
	require.Equal(t, "image's own\n", readTarget(t, h, report.Backups[0]))
}

func TestApplyThroughLinksOutOfTheRootWritesOnlyInsideIt(t *testing.T) {
	outside := t.TempDir()
	sentinel := filepath.Join(outside, "daemon.json")
	require.NoError(t, os.WriteFile(sentinel, []byte("host's own\n"), 0o644))
	h, _ := newTestHost(t)
	rootLayout(t, h.Root, map[string]string{
		"etc/docker/daemon.json": "->" + sentinel,
		"etc/crio/crio.conf":     "->../../../../../../../.." + sentinel,
	})
	steps := []Step{
		fileStep{path: "/etc/docker/daemon.json", content: "{}\n"},
		fileStep{path: "/etc/crio/crio.conf", content: "{}\n"},
		fileStep{path: "/../../../../" + filepath.Join(outside, "x.toml"), content: "x\n"},
	}
	_, err := Apply(context.Background(), h, steps, ApplyOptions{})
	require.NoError(t, err)
	data, err := os.ReadFile(sentinel)
	require.NoError(t, err)
	require.Equal(t, "host's own\n", string(data), "the build host's file is untouched")
	_, err = os.Stat(filepath.Join(outside, "x.toml"))
	require.True(t, os.IsNotExist(err), "nothing is created outside the root (err %v)", err)
	require.Equal(t, "{}\n", readTarget(t, h, sentinel), "the write lands at the link's target inside the root")
	require.Equal(t, "x\n", readTarget(t, h, filepath.Join(outside, "x.toml")))
}

func TestCheckRootSaysAMissingRootIsMissing(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	require.NoError(t, CheckRoot("/"))
	require.NoError(t, CheckRoot(dir))
	require.ErrorContains(t, CheckRoot(filepath.Join(dir, "missing")), "does not exist")
	require.ErrorContains(t, CheckRoot(file), "is not a directory")
}

// A config masked by a link to a device, or a pipe or directory where a
// file is expected, is refused by name before anything is read or written.
func TestOnlyRegularFilesAreReadOrRewritten(t *testing.T) {
	h, _ := newTestHost(t)
	rootLayout(t, h.Root, map[string]string{
		"etc/containerd/config.toml": "->/run/masked",
		"etc/docker/daemon.json/":    "",
	})
	require.NoError(t, os.MkdirAll(filepath.Join(h.Root, "run"), 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(h.Root, "run/masked"), 0o644))

	_, _, err := h.ReadFile("/etc/containerd/config.toml")
	require.ErrorContains(t, err, "/etc/containerd/config.toml (a symbolic link to /run/masked) is a named pipe")
	_, _, err = h.ReadFile("/etc/docker/daemon.json")
	require.ErrorContains(t, err, "/etc/docker/daemon.json is a directory")

	_, err = h.writeFile(&FileChange{Path: "/etc/containerd/config.toml", New: []byte("x\n")}, "/var/backups/gpu-bootstrap/x")
	require.ErrorContains(t, err, "is a named pipe")
	info, err := os.Lstat(filepath.Join(h.Root, "run/masked"))
	require.NoError(t, err)
	require.NotZero(t, info.Mode()&os.ModeNamedPipe, "the pipe is still there")
}

// A file masked by a link to /dev/null (systemd's way to mask a drop-in)
// reads as empty, and is never written through.
func TestAFileMaskedByDevNullReadsEmptyAndIsNotWritten(t *testing.T) {
	info, err := os.Stat("/dev/null")
	require.NoError(t, err)
	require.True(t, isNullDevice(info))
	res := resolvedPath{InRoot: "/dev/null", Links: []symlinkHop{{Link: "/etc/containerd/config.toml", Target: "/dev/null"}}}
	require.NoError(t, requireRegular("/etc/containerd/config.toml", res, info, false))
	require.ErrorContains(t, requireRegular("/etc/containerd/config.toml", res, info, true), "/etc/containerd/config.toml is masked (it resolves to the null device /dev/null)")

	live := &Host{Root: "/"}
	data, exists, err := live.ReadFile("/dev/null")
	require.NoError(t, err)
	require.True(t, exists)
	require.Empty(t, data)

	zero, err := os.Stat("/dev/zero")
	require.NoError(t, err)
	require.False(t, isNullDevice(zero))
	require.ErrorContains(t, requireRegular("/etc/app.conf", resolvedPath{InRoot: "/etc/app.conf"}, zero, false), "/etc/app.conf is a character device")
}
