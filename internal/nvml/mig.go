package nvml

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns Multi-Instance GPU: reading a GPU's MIG mode and instances,
// naming GPU instance profiles, switching MIG mode and laying out instances.
//
// Profile names follow NVIDIA's convention (nvidia-smi, mig-parted,
// go-nvlib's MigProfile): "<slices>g.<memory>gb", with "<n>c." in front when
// a compute instance uses fewer slices than its GPU instance, and "+me",
// "+me.all", "+gfx" or "-me" after it for the media-extension and graphics
// variants. The memory figure is the profile's share of the GPU's memory,
// rounded up to eighths, times the GPU's memory in whole GiB, rounded: an
// A100 40GB's 4864 MiB one-slice profile is "1g.5gb", an A100 80GB's 9856
// MiB one is "1g.10gb".

// errNotMIG is returned by ConfigureMIG on a GPU whose MIG mode is off.
var errNotMIG = errors.New("MIG mode is not enabled")

// readMIGState reads a GPU's MIG mode and, when MIG is on, its instances. The
// returned code is non-SUCCESS only when it means the GPU itself is unusable.
func readMIGState(dev gonvml.Device, totalMiB uint64) (MIG, gonvml.Return) {
	current, pending, ret := call2(dev.GetMigMode)
	if ret != gonvml.SUCCESS {
		if deviceFatal(ret) {
			return MIG{}, ret
		}
		return MIG{}, gonvml.SUCCESS // not a MIG-capable GPU
	}
	m := MIG{
		Supported: true,
		Current:   current == gonvml.DEVICE_MIG_ENABLE,
		Pending:   pending == gonvml.DEVICE_MIG_ENABLE,
	}
	if m.Current {
		totalBytes := totalMiB * mib
		devices, ok := migDevicesByHandle(dev, totalBytes)
		if !ok {
			devices = migDevicesByInstance(dev, totalBytes)
		}
		sort.Slice(devices, func(i, j int) bool { return migLess(devices[i], devices[j]) })
		m.Devices = devices
	}
	return m, gonvml.SUCCESS
}

// migLess orders MIG devices by GPU instance, then compute instance.
func migLess(a, b MIGDevice) bool {
	if a.GPUInstanceID != b.GPUInstanceID {
		return a.GPUInstanceID < b.GPUInstanceID
	}
	return a.ComputeInstanceID < b.ComputeInstanceID
}

// migDevicesByHandle lists MIG devices the way `nvidia-smi -L` does, through
// MIG device handles, which needs no privilege. ok is false when the binding
// does not offer MIG device handles.
func migDevicesByHandle(dev gonvml.Device, totalBytes uint64) (devices []MIGDevice, ok bool) {
	handles, ok := migHandles(dev, totalBytes)
	for _, h := range handles {
		devices = append(devices, h.MIGDevice)
	}
	return devices, ok
}

// migHandle is a MIG device with its handle and the memory reading its
// listing took (nil when NVML did not give one).
type migHandle struct {
	MIGDevice
	dev    gonvml.Device
	memory *gonvml.Memory
}

// migHandles walks the MIG device handles of dev (migDevicesByHandle).
func migHandles(dev gonvml.Device, totalBytes uint64) (handles []migHandle, ok bool) {
	count, ret := call1(dev.GetMaxMigDeviceCount)
	if ret != gonvml.SUCCESS {
		return nil, false
	}
	for i := 0; i < count; i++ {
		mig, ret := call1(func() (gonvml.Device, gonvml.Return) { return dev.GetMigDeviceHandleByIndex(i) })
		if ret == gonvml.ERROR_FUNCTION_NOT_FOUND || ret == gonvml.ERROR_NOT_SUPPORTED {
			return nil, false
		}
		if ret != gonvml.SUCCESS {
			continue // ERROR_NOT_FOUND: an empty slot
		}
		gi, ret1 := call1(mig.GetGpuInstanceId)
		ci, ret2 := call1(mig.GetComputeInstanceId)
		if ret1 != gonvml.SUCCESS || ret2 != gonvml.SUCCESS {
			continue
		}
		h := migHandle{MIGDevice: MIGDevice{GPUInstanceID: gi, ComputeInstanceID: ci}, dev: mig}
		if uuid, ret := call1(mig.GetUUID); ret == gonvml.SUCCESS {
			h.UUID = uuid
		}
		if attrs, ret := call1(mig.GetAttributes); ret == gonvml.SUCCESS {
			h.Profile = profileName(attrs.GpuInstanceSliceCount, attrs.ComputeInstanceSliceCount, attrs.MemorySizeMB, totalBytes, "")
			h.MemoryMiB = attrs.MemorySizeMB
		}
		if mem, ret := call1(mig.GetMemoryInfo); ret == gonvml.SUCCESS {
			h.MemoryMiB = mem.Total / mib
			h.memory = &mem
		}
		handles = append(handles, h)
	}
	return handles, true
}

// migDevicesByInstance lists MIG devices by walking GPU instances and their
// compute instances (privileged in NVML; what mig-parted does). It cannot
// tell MIG device UUIDs.
func migDevicesByInstance(dev gonvml.Device, totalBytes uint64) []MIGDevice {
	var devices []MIGDevice
	walkGPUInstances(dev, func(gi gonvml.GpuInstance, giProfile gonvml.GpuInstanceProfileInfo) {
		giInfo, ret := call1(gi.GetInfo)
		if ret != gonvml.SUCCESS {
			return
		}
		walkComputeInstances(gi, func(ci gonvml.ComputeInstance, ciProfile gonvml.ComputeInstanceProfileInfo) {
			ciInfo, ret := call1(ci.GetInfo)
			if ret != gonvml.SUCCESS {
				return
			}
			devices = append(devices, MIGDevice{
				Profile:           profileName(giProfile.SliceCount, ciProfile.SliceCount, giProfile.MemorySizeMB, totalBytes, profileSuffix(int(giProfile.Id))),
				GPUInstanceID:     int(giInfo.Id),
				ComputeInstanceID: int(ciInfo.Id),
				MemoryMiB:         giProfile.MemorySizeMB,
			})
		})
	})
	return devices
}

// walkGPUInstances calls visit for every GPU instance on dev, profile by
// profile.
func walkGPUInstances(dev gonvml.Device, visit func(gonvml.GpuInstance, gonvml.GpuInstanceProfileInfo)) {
	for pid := 0; pid < gonvml.GPU_INSTANCE_PROFILE_COUNT; pid++ {
		giProfile, ret := call1(func() (gonvml.GpuInstanceProfileInfo, gonvml.Return) { return dev.GetGpuInstanceProfileInfo(pid) })
		if ret != gonvml.SUCCESS {
			continue
		}
		gis, ret := call1(func() ([]gonvml.GpuInstance, gonvml.Return) { return dev.GetGpuInstances(&giProfile) })
		if ret != gonvml.SUCCESS {
			continue
		}
		for _, gi := range gis {
			visit(gi, giProfile)
		}
	}
}

// walkComputeInstances calls visit for every compute instance of gi.
func walkComputeInstances(gi gonvml.GpuInstance, visit func(gonvml.ComputeInstance, gonvml.ComputeInstanceProfileInfo)) {
	for cpid := 0; cpid < gonvml.COMPUTE_INSTANCE_PROFILE_COUNT; cpid++ {
		ciProfile, ret := call1(func() (gonvml.ComputeInstanceProfileInfo, gonvml.Return) {
			return gi.GetComputeInstanceProfileInfo(cpid, gonvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		})
		if ret != gonvml.SUCCESS {
			continue
		}
		cis, ret := call1(func() ([]gonvml.ComputeInstance, gonvml.Return) { return gi.GetComputeInstances(&ciProfile) })
		if ret != gonvml.SUCCESS {
			continue
		}
		for _, ci := range cis {
			visit(ci, ciProfile)
		}
	}
}

// profileName names a MIG profile (see the file comment).
func profileName(giSlices, ciSlices uint32, memoryMiB, deviceBytes uint64, suffix string) string {
	name := fmt.Sprintf("%dg.%dgb", giSlices, migMemoryGB(memoryMiB, deviceBytes))
	if ciSlices != 0 && ciSlices != giSlices {
		name = fmt.Sprintf("%dc.%s", ciSlices, name)
	}
	return name + suffix
}

// migMemoryGB is the "<memory>gb" of a profile name: the profile's share of
// the device memory rounded up to eighths, times the device memory in whole
// GiB, rounded to the nearest integer.
func migMemoryGB(memoryMiB, deviceBytes uint64) uint64 {
	const gib = 1024 * mib
	if deviceBytes == 0 {
		return (memoryMiB + 512) / 1024
	}
	eighths := (8*memoryMiB*mib + deviceBytes - 1) / deviceBytes
	deviceGiB := (deviceBytes + gib - 1) / gib
	return (eighths*deviceGiB + 4) / 8
}

// profileSuffix is the attribute part of a GPU instance profile's name.
func profileSuffix(giProfileID int) string {
	switch giProfileID {
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_REV1:
		return "+me"
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME:
		return "+me.all"
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_GFX, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_GFX,
		gonvml.GPU_INSTANCE_PROFILE_3_SLICE_GFX, gonvml.GPU_INSTANCE_PROFILE_4_SLICE_GFX:
		return "+gfx"
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:
		return "-me"
	}
	return ""
}

// gpuInstanceProfile is a GPU instance profile the GPU offers, by name.
type gpuInstanceProfile struct {
	name string
	info gonvml.GpuInstanceProfileInfo
}

// gpuInstanceProfiles lists the GPU instance profiles dev offers, in profile
// id order; when two ids share a name the first is kept.
func gpuInstanceProfiles(dev gonvml.Device, deviceBytes uint64) []gpuInstanceProfile {
	var profiles []gpuInstanceProfile
	seen := map[string]bool{}
	for pid := 0; pid < gonvml.GPU_INSTANCE_PROFILE_COUNT; pid++ {
		info, ret := call1(func() (gonvml.GpuInstanceProfileInfo, gonvml.Return) { return dev.GetGpuInstanceProfileInfo(pid) })
		if ret != gonvml.SUCCESS || info.SliceCount == 0 {
			continue
		}
		name := profileName(info.SliceCount, info.SliceCount, info.MemorySizeMB, deviceBytes, profileSuffix(pid))
		if seen[name] {
			continue
		}
		seen[name] = true
		profiles = append(profiles, gpuInstanceProfile{name: name, info: info})
	}
	return profiles
}

// SetMIGMode turns MIG mode on or off. resetNeeded is true when NVML could
// only make the change pending: the GPU must be reset (or the VM rebooted)
// before it takes effect.
func (g *GPUs) SetMIGMode(uuid string, enabled bool) (resetNeeded bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	dev, ref, err := g.deviceByUUID(uuid)
	if err != nil {
		return false, err
	}
	mode, action := gonvml.DEVICE_MIG_DISABLE, "disabling"
	if enabled {
		mode, action = gonvml.DEVICE_MIG_ENABLE, "enabling"
	}
	activation, ret := call1(func() (gonvml.Return, gonvml.Return) { return dev.SetMigMode(mode) })
	if ret != gonvml.SUCCESS {
		return false, fmt.Errorf("%s MIG mode on %s: %w", action, ref, explain(ret))
	}
	// activationStatus is ERROR_RESET_REQUIRED where the GPU cannot be reset
	// here (passthrough VMs) and ERROR_IN_USE when processes keep it busy;
	// either way the new mode is pending.
	resetNeeded = activation != gonvml.SUCCESS
	if current, pending, ret := call2(dev.GetMigMode); ret == gonvml.SUCCESS && current != pending {
		resetNeeded = true
	}
	return resetNeeded, nil
}

// ConfigureMIG replaces the GPU's MIG instances with one GPU instance and one
// full compute instance per profile. Every profile name is checked before
// anything is destroyed. GPU instances are created largest first, which
// leaves the placements NVML picks room for the smaller ones; if a creation
// still fails, what was created is destroyed again and the error names the
// profile.
func (g *GPUs) ConfigureMIG(uuid string, profiles []string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	dev, ref, err := g.deviceByUUID(uuid)
	if err != nil {
		return err
	}
	current, _, ret := call2(dev.GetMigMode)
	if ret != gonvml.SUCCESS {
		return fmt.Errorf("reading MIG mode of %s: %w", ref, explain(ret))
	}
	if current != gonvml.DEVICE_MIG_ENABLE {
		return fmt.Errorf("configuring MIG instances on %s: %w; enable MIG mode and reset the GPU first", ref, errNotMIG)
	}
	mem, ret := call1(dev.GetMemoryInfo)
	if ret != gonvml.SUCCESS {
		return fmt.Errorf("reading memory size of %s: %w", ref, explain(ret))
	}
	wanted, err := resolveProfiles(gpuInstanceProfiles(dev, mem.Total), profiles, ref)
	if err != nil {
		return err
	}
	if err := destroyInstances(dev, ref); err != nil {
		return err
	}
	sort.SliceStable(wanted, func(i, j int) bool { return wanted[i].info.SliceCount > wanted[j].info.SliceCount })
	for _, p := range wanted {
		if err := createInstance(dev, p, ref); err != nil {
			if cleanupErr := destroyInstances(dev, ref); cleanupErr != nil {
				err = errors.Join(err, cleanupErr)
			}
			return err
		}
	}
	return nil
}

// resolveProfiles maps profile names to the GPU's profiles, or says which
// names it does not offer and which it does.
func resolveProfiles(available []gpuInstanceProfile, names []string, ref gpuRef) ([]gpuInstanceProfile, error) {
	byName := make(map[string]gpuInstanceProfile, len(available))
	for _, p := range available {
		byName[p.name] = p
	}
	var wanted []gpuInstanceProfile
	var unknown []string
	for _, name := range names {
		p, ok := byName[strings.ToLower(strings.TrimSpace(name))]
		if !ok {
			unknown = append(unknown, fmt.Sprintf("%q", name))
			continue
		}
		wanted = append(wanted, p)
	}
	if len(unknown) > 0 {
		offered := make([]string, len(available))
		for i, p := range available {
			offered[i] = p.name
		}
		return nil, fmt.Errorf("%s offers no MIG profile %s; it offers: %s", ref, strings.Join(unknown, ", "), strings.Join(offered, ", "))
	}
	return wanted, nil
}

// destroyInstances removes every compute instance, then every GPU instance.
func destroyInstances(dev gonvml.Device, ref gpuRef) error {
	var gis []gonvml.GpuInstance
	walkGPUInstances(dev, func(gi gonvml.GpuInstance, _ gonvml.GpuInstanceProfileInfo) { gis = append(gis, gi) })
	var errs []error
	for _, gi := range gis {
		walkComputeInstances(gi, func(ci gonvml.ComputeInstance, _ gonvml.ComputeInstanceProfileInfo) {
			if ret := callReturn(ci.Destroy); ret != gonvml.SUCCESS {
				errs = append(errs, fmt.Errorf("destroying a MIG compute instance on %s: %w", ref, explain(ret)))
			}
		})
		if ret := callReturn(gi.Destroy); ret != gonvml.SUCCESS {
			errs = append(errs, fmt.Errorf("destroying a MIG GPU instance on %s: %w", ref, explain(ret)))
		}
	}
	return errors.Join(errs...)
}

// createInstance creates one GPU instance of profile p and one compute
// instance spanning all its slices.
func createInstance(dev gonvml.Device, p gpuInstanceProfile, ref gpuRef) error {
	gi, ret := call1(func() (gonvml.GpuInstance, gonvml.Return) { return dev.CreateGpuInstance(&p.info) })
	if ret != gonvml.SUCCESS {
		return fmt.Errorf("creating MIG GPU instance %s on %s: %w", p.name, ref, explain(ret))
	}
	for cpid := 0; cpid < gonvml.COMPUTE_INSTANCE_PROFILE_COUNT; cpid++ {
		ci, ret := call1(func() (gonvml.ComputeInstanceProfileInfo, gonvml.Return) {
			return gi.GetComputeInstanceProfileInfo(cpid, gonvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		})
		if ret != gonvml.SUCCESS || ci.SliceCount != p.info.SliceCount {
			continue
		}
		if _, ret := call1(func() (gonvml.ComputeInstance, gonvml.Return) { return gi.CreateComputeInstance(&ci) }); ret != gonvml.SUCCESS {
			return fmt.Errorf("creating the compute instance of MIG %s on %s: %w", p.name, ref, explain(ret))
		}
		return nil
	}
	return fmt.Errorf("creating the compute instance of MIG %s on %s: the GPU instance offers no %d-slice compute profile", p.name, ref, p.info.SliceCount)
}
