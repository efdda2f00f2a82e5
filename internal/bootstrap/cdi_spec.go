package bootstrap

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

// This file generates the CDI spec of the GPUs. It follows what
// nvidia-container-toolkit v1.20.1's `nvidia-ctk cdi generate` (pkg/nvcdi,
// internal/discover) puts in a spec, read from the toolkit's source:
//
//   - kind nvidia.com/gpu; one device per GPU named by index and one named
//     by UUID (the default --device-name-strategy=index,uuid), plus "all";
//   - per GPU: /dev/nvidia<minor> and its /dev/dri card and render nodes,
//     with create-symlinks hooks for their /dev/dri/by-path links;
//   - for every device: the control nodes present (/dev/nvidia-modeset,
//     -uvm-tools, -uvm, /dev/nvidiactl); read-only bind mounts of every
//     library ending in the driver version (and the legacy
//     libnvidia-nvvm70), of the GSP firmware, of the driver binaries and of
//     the persistenced/fabricmanager/MPS sockets; NVIDIA_VISIBLE_DEVICES=void
//     so the legacy runtime hook does not inject a second time; a
//     create-symlinks hook for libcuda.so and the SONAME links and an
//     update-ldcache hook over the library folders;
//   - device nodes and mounts sorted by depth, then path; devices by name
//     (nvcdi's transform/sorter.go);
//   - cdiVersion is the lowest version whose features the spec uses
//     (nvidia-ctk does the same on save), which the widest range of engines
//     accept.
//
// Where it differs, on purpose:
//
//   - Paths are target paths. nvidia-ctk's --driver-root prefixes host
//     paths; gpu-bootstrap's --root is where the target's files are while the
//     spec is written (an image being built), not where they will be when a
//     container starts.
//   - Device nodes carry only their path: the engine reads major, minor and
//     mode from the node when a container starts. nvidia-ctk also writes
//     them, which ties the spec to this boot (nvidia-uvm's major number is
//     dynamic) and cannot be read from regular files in an image or a test.
//   - A GPU's /dev/nvidia<minor> is listed even when the node is not there
//     yet (the driver creates it on first use); NVML listing the GPU is the
//     proof it exists.
//   - Only the create-symlinks and update-ldcache hooks are emitted: every
//     nvidia-cdi-hook (toolkit 1.16+) and `nvidia-ctk hook` before it has
//     them. nvidia-ctk 1.20.1 adds enable-cuda-compat (1.17.5+),
//     disable-device-node-modification (1.17.8+), update-application-profile
//     (1.20.0+) and apply-cuda-memory-limits (1.20.1+); a spec naming a hook
//     the node's toolkit lacks makes every GPU container fail to start.
//   - No NVIDIA_CTK_LIBCUDA_DIR: only the enable-cuda-compat hook reads it.
//   - No MIG devices ("0:1", "MIG-<uuid>" with their /dev/nvidia-caps
//     nodes): the spec lists full GPUs only.
//   - The minor number of each GPU comes from
//     /proc/driver/nvidia/gpus/*/information (matched by UUID, then by bus
//     id); when /proc is not there, the NVML index is taken as the minor.

// cdiKind is the vendor/class of the spec's devices.
const cdiKind = "nvidia.com/gpu"

// cdiLibraryDirs are searched for the driver's libraries, in the order of
// the toolkit's library locator (pkg/lookup/library.go); each also with its
// vdpau subdirectory, as nvcdi asks for.
var cdiLibraryDirs = []string{
	"/usr/lib64",
	"/usr/lib/x86_64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu",
	"/usr/lib/x86_64-linux-gnu/nvidia/current",
	"/usr/lib/aarch64-linux-gnu/nvidia/current",
	"/lib64",
	"/lib/x86_64-linux-gnu",
	"/lib/aarch64-linux-gnu",
	"/lib/x86_64-linux-gnu/nvidia/current",
	"/lib/aarch64-linux-gnu/nvidia/current",
}

// cdiBinaryDirs is the toolkit's default PATH for the executable locator.
var cdiBinaryDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// cdiDriverBinaries are the driver's programs nvcdi mounts.
var cdiDriverBinaries = []string{
	"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
	"nvidia-cuda-mps-control", "nvidia-cuda-mps-server",
	"nvidia-imex", "nvidia-imex-ctl",
}

// cdiControlDevices are the device nodes every GPU container needs, in
// nvcdi's order.
var cdiControlDevices = []string{"/dev/nvidia-modeset", "/dev/nvidia-uvm-tools", "/dev/nvidia-uvm", "/dev/nvidiactl"}

// Mount options of nvcdi: libraries, binaries and firmware read-only; IPC
// sockets writable but not executable.
var (
	cdiFileMountOptions   = []string{"ro", "nosuid", "nodev", "rbind", "rprivate"}
	cdiSocketMountOptions = []string{"nosuid", "nodev", "rbind", "rprivate", "noexec"}
)

// generateCDISpec builds the spec of the GPUs in snap from the files under
// h.Root.
func generateCDISpec(h *Host, snap nvml.Snapshot) (*specs.Spec, error) {
	version := snap.Driver.Version
	if version == "" {
		return nil, fmt.Errorf("NVML does not report the driver version, which names the driver's libraries; cannot write the CDI spec")
	}
	if len(snap.Devices) == 0 {
		return nil, fmt.Errorf("the driver is loaded but NVML lists no GPUs; there is nothing to put in the CDI spec (`gpu-bootstrap inventory` shows what was found)")
	}
	hooks := newCDIHooks(h)
	libs := cdiDriverLibraries(h, version)

	common := specs.ContainerEdits{Env: []string{"NVIDIA_VISIBLE_DEVICES=void"}}
	for _, node := range cdiControlDevices {
		if h.Exists(node) {
			common.DeviceNodes = append(common.DeviceNodes, &specs.DeviceNode{Path: node})
		}
	}
	if links := cdiLibraryLinks(h, libs, version); len(links) > 0 {
		common.Hooks = append(common.Hooks, hooks.createSymlinks(links))
	}
	if folders := cdiLibraryFolders(libs); len(folders) > 0 {
		common.Hooks = append(common.Hooks, hooks.updateLDCache(folders))
	}
	var mounts []string
	mounts = append(mounts, cdiDriverBinaryPaths(h)...)
	mounts = append(mounts, libs...)
	mounts = append(mounts, cdiDriverFirmware(h, version)...)
	for _, m := range mounts {
		common.Mounts = append(common.Mounts, &specs.Mount{HostPath: m, ContainerPath: m, Options: cdiFileMountOptions})
	}
	for _, m := range cdiDriverSockets(h) {
		common.Mounts = append(common.Mounts, &specs.Mount{HostPath: m, ContainerPath: m, Options: cdiSocketMountOptions})
	}

	spec := &specs.Spec{Kind: cdiKind, ContainerEdits: common}
	minors := procGPUInformation(h)
	var all specs.ContainerEdits
	for _, dev := range snap.Devices {
		if dev.UUID == "" {
			return nil, fmt.Errorf("GPU %d has no UUID (%s); reset the GPU or reboot, then run again", dev.Index, gpuReadError(dev))
		}
		edits := cdiGPUEdits(h, hooks, dev, minors)
		spec.Devices = append(spec.Devices,
			specs.Device{Name: strconv.Itoa(dev.Index), ContainerEdits: edits},
			specs.Device{Name: dev.UUID, ContainerEdits: edits},
		)
		all.DeviceNodes = append(all.DeviceNodes, edits.DeviceNodes...)
		all.Hooks = append(all.Hooks, edits.Hooks...)
	}
	spec.Devices = append(spec.Devices, specs.Device{Name: "all", ContainerEdits: all})
	sortCDISpec(spec)
	minVersion, err := specs.MinimumRequiredVersion(spec)
	if err != nil {
		return nil, fmt.Errorf("working out the CDI version: %w", err)
	}
	spec.Version = minVersion
	return spec, nil
}

// sortCDISpec orders devices by name and, in every edit, device nodes and
// mounts by the depth of their container path, then the path.
func sortCDISpec(spec *specs.Spec) {
	byDepth := func(a, b string) int {
		if da, db := strings.Count(path.Clean(a), "/"), strings.Count(path.Clean(b), "/"); da != db {
			return cmp.Compare(da, db)
		}
		return strings.Compare(a, b)
	}
	sortEdits := func(e *specs.ContainerEdits) {
		slices.SortStableFunc(e.DeviceNodes, func(a, b *specs.DeviceNode) int { return byDepth(a.Path, b.Path) })
		slices.SortStableFunc(e.Mounts, func(a, b *specs.Mount) int { return byDepth(a.ContainerPath, b.ContainerPath) })
	}
	sortEdits(&spec.ContainerEdits)
	for i := range spec.Devices {
		sortEdits(&spec.Devices[i].ContainerEdits)
	}
	slices.SortStableFunc(spec.Devices, func(a, b specs.Device) int { return strings.Compare(a.Name, b.Name) })
}

func gpuReadError(dev nvml.Device) string {
	if dev.Error != "" {
		return dev.Error
	}
	return "NVML did not report it"
}

// procGPUInfo is what the driver says about one GPU in
// /proc/driver/nvidia/gpus/<bus id>/information.
type procGPUInfo struct {
	minor int
	busID string
}

// procGPUInformation reads every GPU information file under the root, keyed by
// UUID and by lower-case bus id.
func procGPUInformation(h *Host) map[string]procGPUInfo {
	infos := map[string]procGPUInfo{}
	for _, file := range h.glob("/proc/driver/nvidia/gpus/*/information") {
		data, ok, err := h.ReadFile(file)
		if err != nil || !ok {
			continue
		}
		fields := map[string]string{}
		scanner := bufio.NewScanner(bytes.NewReader(data))
		for scanner.Scan() {
			key, value, found := strings.Cut(scanner.Text(), ":")
			if found {
				fields[strings.TrimSpace(key)] = strings.TrimSpace(value)
			}
		}
		minor, err := strconv.Atoi(fields["Device Minor"])
		if err != nil {
			continue
		}
		info := procGPUInfo{minor: minor, busID: strings.ToLower(fields["Bus Location"])}
		if uuid := fields["GPU UUID"]; uuid != "" {
			infos[uuid] = info
		}
		if info.busID != "" {
			infos[info.busID] = info
		}
	}
	return infos
}

// cdiGPUEdits are the edits of one GPU: its device nodes and the by-path links
// of its DRM nodes.
func cdiGPUEdits(h *Host, hooks cdiHooks, dev nvml.Device, infos map[string]procGPUInfo) specs.ContainerEdits {
	info, ok := infos[dev.UUID]
	if !ok {
		info, ok = infos[strings.ToLower(dev.PCIBusID)]
	}
	if !ok {
		info = procGPUInfo{minor: dev.Index}
	}
	busID := strings.ToLower(dev.PCIBusID)
	if busID == "" {
		busID = info.busID
	}
	edits := specs.ContainerEdits{
		DeviceNodes: []*specs.DeviceNode{{Path: fmt.Sprintf("/dev/nvidia%d", info.minor)}},
	}
	if busID == "" {
		return edits
	}
	drm := map[string]bool{}
	for _, entry := range h.glob(path.Join("/sys/bus/pci/devices", busID, "drm", "*")) {
		name := path.Base(entry)
		node := path.Join("/dev/dri", name)
		if (strings.HasPrefix(name, "card") || strings.HasPrefix(name, "renderD")) && h.Exists(node) {
			edits.DeviceNodes = append(edits.DeviceNodes, &specs.DeviceNode{Path: node})
			drm[node] = true
		}
	}
	var links []string
	for _, kind := range []string{"card", "render"} {
		link := fmt.Sprintf("/dev/dri/by-path/pci-%s-%s", busID, kind)
		dest, err := os.Readlink(h.linkPath(link))
		if err != nil {
			continue
		}
		node := dest
		if !path.IsAbs(node) {
			node = path.Join(path.Dir(link), dest)
		}
		if drm[node] {
			links = append(links, dest+"::"+link)
		}
	}
	if len(links) > 0 {
		edits.Hooks = []*specs.Hook{hooks.createSymlinks(links)}
	}
	return edits
}

// cdiDriverLibraries are the driver's user-space libraries: every file ending
// in the driver version (libcuda.so.550.54.15, libnvidia-ml.so.550.54.15,
// …) and the legacy libnvidia-nvvm70, in the library directories, each
// listed once at its resolved path.
func cdiDriverLibraries(h *Host, version string) []string {
	var dirs []string
	for _, dir := range cdiLibraryDirs {
		dirs = append(dirs, dir, path.Join(dir, "vdpau"))
	}
	var libs []string
	seen := map[string]bool{}
	for _, pattern := range []string{"*.so." + version, "libnvidia-nvvm70.so.*"} {
		for _, dir := range dirs {
			for _, match := range h.glob(path.Join(dir, pattern)) {
				target, err := h.resolve(match)
				if err != nil || seen[target] || !h.isRegularFile(target) {
					continue
				}
				seen[target] = true
				libs = append(libs, target)
			}
		}
	}
	return libs
}

// isRegularFile reports whether a target path is a regular file.
func (h *Host) isRegularFile(target string) bool {
	info, err := os.Lstat(h.linkPath(target))
	return err == nil && info.Mode().IsRegular()
}

// cdiLibraryFolders are the folders of the libraries, once each, in order:
// the update-ldcache hook's --folder arguments.
func cdiLibraryFolders(libs []string) []string {
	var folders []string
	seen := map[string]bool{}
	for _, lib := range libs {
		dir := path.Dir(lib)
		if !seen[dir] {
			seen[dir] = true
			folders = append(folders, dir)
		}
	}
	return folders
}

// cdiLibraryLinks are the links the create-symlinks hook makes in the
// container, as "target::link": libcuda.so (which applications dlopen
// though the driver ships no such link), the GLX indirect and opticalflow
// links nvcdi adds, and each library's SONAME and .so links when they exist
// next to it on the target.
func cdiLibraryLinks(h *Host, libs []string, version string) []string {
	var links []string
	seen := map[string]bool{}
	add := func(target, link string) {
		if arg := target + "::" + link; !seen[arg] {
			seen[arg] = true
			links = append(links, arg)
		}
	}
	for _, lib := range libs {
		dir, name := path.Split(lib)
		switch name {
		case "libcuda.so." + version:
			add("libcuda.so.1", path.Join(dir, "libcuda.so"))
		case "libGLX_nvidia.so." + version:
			add(name, path.Join(dir, "libGLX_indirect.so.0"))
		case "libnvidia-opticalflow.so." + version:
			add("libnvidia-opticalflow.so.1", path.Join(dir, "libnvidia-opticalflow.so"))
		}
		soname := h.soname(lib)
		if soname != "" && soname != name && h.isSymlink(path.Join(dir, soname)) {
			add(name, path.Join(dir, soname))
		}
		target := soname
		if target == "" {
			target = name
		}
		if link := soLink(target); link != "" && link != target && h.isSymlink(path.Join(dir, link)) {
			add(target, path.Join(dir, link))
		}
	}
	return links
}

// cdiDriverBinaryPaths are the driver programs found on the target's PATH, the
// first of each name.
func cdiDriverBinaryPaths(h *Host) []string {
	var found []string
	for _, name := range cdiDriverBinaries {
		for _, dir := range cdiBinaryDirs {
			if p := path.Join(dir, name); h.isExecutableFile(p) {
				found = append(found, p)
				break
			}
		}
	}
	return found
}

// cdiDriverFirmware is the GSP and ucode firmware of this driver version.
// (nvcdi also looks in the running kernel's firmware directories, which in
// an image are not the image's kernel; those are left out.)
func cdiDriverFirmware(h *Host, version string) []string {
	var found []string
	for _, dir := range []string{"/lib/firmware/updates", "/lib/firmware"} {
		for _, pattern := range []string{"gsp*.bin", "ucodes*.bin"} {
			found = append(found, h.glob(path.Join(dir, "nvidia", version, pattern))...)
		}
	}
	return found
}

// cdiDriverSockets are the IPC sockets of the driver's daemons that exist now:
// nvidia-persistenced, nvidia-fabricmanager (the first of /run, /var/run)
// and the MPS pipe directory.
func cdiDriverSockets(h *Host) []string {
	var found []string
	for _, socket := range []string{"/nvidia-persistenced/socket", "/nvidia-fabricmanager/socket"} {
		for _, dir := range []string{"/run", "/var/run"} {
			if p := dir + socket; h.Exists(p) {
				found = append(found, p)
				break
			}
		}
	}
	if h.Exists("/tmp/nvidia-mps") {
		found = append(found, "/tmp/nvidia-mps")
	}
	return found
}
