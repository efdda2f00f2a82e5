package bootstrap

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuinfra/terraform-provider-gpu/internal/tomledit"
)

// engineVersion is a container engine's version as its --version prints it.
type engineVersion struct {
	major, minor, patch int
	text                string // "1.7.12"
}

func (v engineVersion) atLeast(major, minor int) bool {
	return v.major > major || v.major == major && v.minor >= minor
}

func (v engineVersion) String() string { return v.text }

var versionWord = regexp.MustCompile(`^v?(\d+)\.(\d+)(?:\.(\d+))?`)

// probeVersion runs `name --version` on the target and reads the first
// word that looks like a version:
//
//	containerd github.com/containerd/containerd/v2 v2.0.2 c507a0257ea6...
//	containerd containerd.io 1.6.28 ae07eda36dd2...
//	crio version 1.29.1
//
// ok is false when the command is missing, fails or prints no version (as
// under --dry-run, whose runner runs nothing).
func probeVersion(ctx context.Context, h *Host, name string) (v engineVersion, ok bool) {
	out, err := h.Run(ctx, name, "--version")
	if err != nil {
		return engineVersion{}, false
	}
	return parseEngineVersion(string(out.Stdout))
}

func parseEngineVersion(text string) (engineVersion, bool) {
	for _, word := range strings.Fields(text) {
		m := versionWord.FindStringSubmatch(word)
		if m == nil {
			continue
		}
		v := engineVersion{text: strings.TrimPrefix(word, "v")}
		v.major, _ = strconv.Atoi(m[1])
		v.minor, _ = strconv.Atoi(m[2])
		if m[3] != "" {
			v.patch, _ = strconv.Atoi(m[3])
		}
		return v, true
	}
	return engineVersion{}, false
}

// detectEngine finds the one container engine installed under the root,
// by its binary or its config (containerEngine.installed), leaving out one
// that belongs to another found beside it (containerEngine.hiddenBy). More
// than one engine, or none, is an error that asks for runtime.engine.
func detectEngine(h *Host) (engine, evidence string, err error) {
	found := map[string]string{}
	for i := range containerEngines {
		found[containerEngines[i].name] = containerEngines[i].detect(h)
	}
	for i := range containerEngines {
		e := &containerEngines[i]
		if e.hiddenBy != nil && found[e.name] != "" && e.hiddenBy(h, found) {
			found[e.name] = ""
		}
	}
	var engines []string
	for engine, path := range found {
		if path != "" {
			engines = append(engines, engine)
		}
	}
	slices.Sort(engines)
	switch len(engines) {
	case 1:
		return engines[0], found[engines[0]], nil
	case 0:
		return "", "", fieldError("runtime.engine", "auto found no container engine under %s (no containerd, dockerd or crio binary or config); install one first or set runtime.engine", h.Path("/"))
	}
	var list []string
	for _, e := range engines {
		list = append(list, fmt.Sprintf("%s (%s)", e, found[e]))
	}
	return "", "", fieldError("runtime.engine", "auto found more than one container engine: %s; set runtime.engine to the one that runs the GPU containers", strings.Join(list, ", "))
}

// containerdServesCRI reports whether containerd's own config keeps the CRI
// plugin on, i.e. it is a Kubernetes runtime and not just Docker's backend.
func containerdServesCRI(h *Host) bool {
	disabled, known := containerdCRIDisabled(h)
	return known && !disabled
}

// containerdDisablesCRI reports whether /etc/containerd/config.toml turns
// the CRI plugin off (Docker's containerd.io package).
func containerdDisablesCRI(h *Host) bool {
	disabled, known := containerdCRIDisabled(h)
	return known && disabled
}

// containerdCRIDisabled reads disabled_plugins of /etc/containerd/config.toml;
// known is false when there is no such file. A file that does not parse
// counts as keeping CRI on (containerd's default).
func containerdCRIDisabled(h *Host) (disabled, known bool) {
	data, exists, err := h.ReadFile(defaultContainerdConfig)
	if err != nil || !exists {
		return false, false
	}
	doc, err := tomledit.Parse(data)
	if err != nil {
		return false, true
	}
	v, _ := doc.Get("disabled_plugins")
	list, _ := stringList(v)
	return slices.Contains(list, "cri") || slices.Contains(list, "io.containerd.grpc.v1.cri"), true
}
