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

// migLess orders MIG devices by GPU instance, then compute instance.
func migLess(a, b MIGDevice) bool {
	if a.GPUInstanceID != b.GPUInstanceID {
		return a.GPUInstanceID < b.GPUInstanceID
	}
	return a.ComputeInstanceID < b.ComputeInstanceID
}

// migHandle is a MIG device with its handle and the memory reading its
// listing took (nil when NVML did not give one); a device found by walking
// the instances has neither.
type migHandle struct {
	MIGDevice
	dev    gonvml.Device
	memory *gonvml.Memory
}

// migHandles walks the MIG device handles of dev, as `nvidia-smi -L` does.
// ok is false when the binding does not offer MIG device handles. fatal is
// an answer that means the GPU is unusable; the walk ends at it.
func migHandles(dev gonvml.Device, totalBytes uint64) (handles []migHandle, ok bool, fatal gonvml.Return) {
	count, ret := call1(dev.GetMaxMigDeviceCount)
	if deviceFatal(ret) {
		return nil, false, ret
	}
	if ret != gonvml.SUCCESS {
		return nil, false, gonvml.SUCCESS
	}
	for i := 0; i < count; i++ {
		mig, ret := call1(func() (gonvml.Device, gonvml.Return) { return dev.GetMigDeviceHandleByIndex(i) })
		switch {
		case deviceFatal(ret):
			return nil, false, ret
		case ret == gonvml.ERROR_FUNCTION_NOT_FOUND || ret == gonvml.ERROR_NOT_SUPPORTED:
			return nil, false, gonvml.SUCCESS
		case ret != gonvml.SUCCESS:
			continue // ERROR_NOT_FOUND: an empty slot
		}
		h, fatal := readMIGHandle(mig, totalBytes)
		if fatal != gonvml.SUCCESS {
			return nil, false, fatal
		}
		if h != nil {
			handles = append(handles, *h)
		}
	}
	return handles, true, gonvml.SUCCESS
}

// readMIGHandle reads one MIG device through its handle; nil when it does
// not say which instances it is. fatal is an answer that means the GPU is
// unusable; nothing is asked after it.
func readMIGHandle(mig gonvml.Device, totalBytes uint64) (h *migHandle, fatal gonvml.Return) {
	gi, ret := call1(mig.GetGpuInstanceId)
	if ret != gonvml.SUCCESS {
		return nil, fatalOnly(ret)
	}
	ci, ret := call1(mig.GetComputeInstanceId)
	if ret != gonvml.SUCCESS {
		return nil, fatalOnly(ret)
	}
	h = &migHandle{MIGDevice: MIGDevice{GPUInstanceID: gi, ComputeInstanceID: ci}, dev: mig}
	uuid, ret := call1(mig.GetUUID)
	if deviceFatal(ret) {
		return nil, ret
	}
	if ret == gonvml.SUCCESS {
		h.UUID = uuid
	}
	attrs, ret := call1(mig.GetAttributes)
	if deviceFatal(ret) {
		return nil, ret
	}
	if ret == gonvml.SUCCESS {
		h.Profile = profileName(attrs.GpuInstanceSliceCount, attrs.ComputeInstanceSliceCount, attrs.MemorySizeMB, totalBytes, "")
		h.MemoryMiB = attrs.MemorySizeMB
	}
	mem, ret := call1(mig.GetMemoryInfo)
	if deviceFatal(ret) {
		return nil, ret
	}
	if ret == gonvml.SUCCESS {
		h.MemoryMiB = mem.Total / mib
		h.memory = &mem
	}
	return h, gonvml.SUCCESS
}

// fatalOnly is ret when it means the GPU is unusable, else SUCCESS.
func fatalOnly(ret gonvml.Return) gonvml.Return {
	if deviceFatal(ret) {
		return ret
	}
	return gonvml.SUCCESS
}

// migDevicesByInstance lists MIG devices by walking GPU instances and their
// compute instances (privileged in NVML; what mig-parted does). It cannot
// tell MIG device UUIDs. fatal is as for migHandles.
func migDevicesByInstance(dev gonvml.Device, totalBytes uint64) (devices []MIGDevice, fatal gonvml.Return) {
	fatal = walkGPUInstances(dev, func(gi gonvml.GpuInstance, giProfile gonvml.GpuInstanceProfileInfo) gonvml.Return {
		giInfo, ret := call1(gi.GetInfo)
		if ret != gonvml.SUCCESS {
			return fatalOnly(ret)
		}
		return walkComputeInstances(gi, func(ci gonvml.ComputeInstance, ciProfile gonvml.ComputeInstanceProfileInfo) gonvml.Return {
			ciInfo, ret := call1(ci.GetInfo)
			if ret != gonvml.SUCCESS {
				return fatalOnly(ret)
			}
			devices = append(devices, MIGDevice{
				Profile:           profileName(giProfile.SliceCount, ciProfile.SliceCount, giProfile.MemorySizeMB, totalBytes, profileSuffix(int(giProfile.Id))),
				GPUInstanceID:     int(giInfo.Id),
				ComputeInstanceID: int(ciInfo.Id),
				MemoryMiB:         giProfile.MemorySizeMB,
			})
			return gonvml.SUCCESS
		})
	})
	return devices, fatal
}

// walkGPUInstances calls visit for every GPU instance on dev, profile by
// profile. An answer that means the GPU is unusable, NVML's or visit's,
// ends the walk and is returned; SUCCESS otherwise.
func walkGPUInstances(dev gonvml.Device, visit func(gonvml.GpuInstance, gonvml.GpuInstanceProfileInfo) gonvml.Return) gonvml.Return {
	for pid := 0; pid < gonvml.GPU_INSTANCE_PROFILE_COUNT; pid++ {
		giProfile, ret := call1(func() (gonvml.GpuInstanceProfileInfo, gonvml.Return) { return dev.GetGpuInstanceProfileInfo(pid) })
		if ret != gonvml.SUCCESS {
			if deviceFatal(ret) {
				return ret
			}
			continue
		}
		gis, ret := call1(func() ([]gonvml.GpuInstance, gonvml.Return) { return dev.GetGpuInstances(&giProfile) })
		if ret != gonvml.SUCCESS {
			if deviceFatal(ret) {
				return ret
			}
			continue
		}
		for _, gi := range gis {
			if fatal := visit(gi, giProfile); fatal != gonvml.SUCCESS {
				return fatal
			}
		}
	}
	return gonvml.SUCCESS
}

// walkComputeInstances calls visit for every compute instance of gi; an
// answer that means the GPU is unusable ends it as in walkGPUInstances.
func walkComputeInstances(gi gonvml.GpuInstance, visit func(gonvml.ComputeInstance, gonvml.ComputeInstanceProfileInfo) gonvml.Return) gonvml.Return {
	for cpid := 0; cpid < gonvml.COMPUTE_INSTANCE_PROFILE_COUNT; cpid++ {
		ciProfile, ret := call1(func() (gonvml.ComputeInstanceProfileInfo, gonvml.Return) {
			return gi.GetComputeInstanceProfileInfo(cpid, gonvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		})
		if ret != gonvml.SUCCESS {
			if deviceFatal(ret) {
				return ret
			}
			continue
		}
		cis, ret := call1(func() ([]gonvml.ComputeInstance, gonvml.Return) { return gi.GetComputeInstances(&ciProfile) })
		if ret != gonvml.SUCCESS {
			if deviceFatal(ret) {
				return ret
			}
			continue
		}
		for _, ci := range cis {
			if fatal := visit(ci, ciProfile); fatal != gonvml.SUCCESS {
				return fatal
			}
		}
	}
	return gonvml.SUCCESS
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
	var errs []error
	listed := func(ret gonvml.Return) {
		if ret != gonvml.SUCCESS {
			errs = append(errs, fmt.Errorf("listing the MIG instances of %s: %w", ref, explain(ret)))
		}
	}
	listed(walkGPUInstances(dev, func(gi gonvml.GpuInstance, _ gonvml.GpuInstanceProfileInfo) gonvml.Return {
		gis = append(gis, gi)
		return gonvml.SUCCESS
	}))
	for _, gi := range gis {
		listed(walkComputeInstances(gi, func(ci gonvml.ComputeInstance, _ gonvml.ComputeInstanceProfileInfo) gonvml.Return {
			if ret := callReturn(ci.Destroy); ret != gonvml.SUCCESS {
				errs = append(errs, fmt.Errorf("destroying a MIG compute instance on %s: %w", ref, explain(ret)))
			}
			return gonvml.SUCCESS
		}))
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
