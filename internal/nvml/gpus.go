package nvml

import (
	"fmt"
	"strings"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Options say where NVML and sysfs come from.
type Options struct {
	// Lib is the NVML binding; nil loads libnvidia-ml.so.1 through go-nvml.
	// Tests pass go-nvml's mocks (pkg/nvml/mock/dgxa100).
	Lib gonvml.Interface
	// SysfsRoot is the directory holding bus/pci/devices; "" means /sys.
	SysfsRoot string
	// Now stamps telemetry samples and events; nil means time.Now. Tests
	// pass nvmltest's virtual clock (Fleet.Now), so that rates computed
	// between samples follow the scripted GPUs.
	Now func() time.Time
}

// GPUs implements Library over go-nvml. NVML is initialized lazily, on the
// first Snapshot or setter, and again on the next call for as long as it
// keeps failing, so a driver installed after New is found. A GPUs is safe
// for concurrent use; calls are serialized.
type GPUs struct {
	lib       gonvml.Interface
	sysfsRoot string
	now       func() time.Time

	mu          sync.Mutex
	initialized bool   // Init succeeded and Shutdown has not been called
	reason      string // why the last Init failed
	// state is what Snapshot and Sample remember between calls
	// (sample-buffer timestamps, readings a GPU does not support); it
	// lives as long as one NVML initialization.
	state readState
	// watches are the running WatchEvents loops; Close ends them before
	// it shuts NVML down.
	watches watches
}

var _ Library = (*GPUs)(nil)

// New returns a Library over NVML. It does not fail when the driver is
// missing: Snapshot reports that.
func New(opts Options) *GPUs {
	lib := opts.Lib
	if lib == nil {
		// go-nvml only records the library name here; dlopen happens in Init.
		lib = gonvml.New()
	}
	root := opts.SysfsRoot
	if root == "" {
		root = "/sys"
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &GPUs{lib: lib, sysfsRoot: root, now: now}
}

// Close ends every WatchEvents loop (their channels close), then shuts NVML
// down if it was initialized. It is safe to call more than once; a later
// Snapshot or Sample initializes NVML again.
func (g *GPUs) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.watches.stopAll()
	if !g.initialized {
		return nil
	}
	g.initialized = false
	g.state = readState{}
	if ret := callReturn(g.lib.Shutdown); ret != gonvml.SUCCESS && ret != gonvml.ERROR_FUNCTION_NOT_FOUND {
		return fmt.Errorf("shutting down NVML: %w", ret)
	}
	return nil
}

// ensureInit initializes NVML unless that already succeeded, and says
// whether a driver is there to talk to. g.mu must be held.
func (g *GPUs) ensureInit() bool {
	if g.initialized {
		return true
	}
	ret := callReturn(g.lib.Init)
	if ret == gonvml.SUCCESS {
		g.initialized, g.reason = true, ""
		return true
	}
	g.reason = initFailureReason(ret)
	return false
}

// initFailureReason turns an Init failure into the Driver.Reason a user
// reads: the two common cases in words, anything else as NVML says it.
func initFailureReason(ret gonvml.Return) string {
	switch ret {
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		return "no NVIDIA driver loaded (libnvidia-ml.so.1 not found)"
	case gonvml.ERROR_DRIVER_NOT_LOADED:
		return "NVIDIA driver not loaded (kernel module missing)"
	case gonvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return fmt.Sprintf("NVIDIA driver/library version mismatch (%v): reboot or reload the kernel module after a driver upgrade", ret)
	case gonvml.ERROR_NO_PERMISSION:
		return fmt.Sprintf("NVML initialisation failed: %v (no access to /dev/nvidia*)", ret)
	default:
		return fmt.Sprintf("NVML initialisation failed: %v", ret)
	}
}

// deviceByUUID finds a GPU for a setter, initializing NVML if needed. It
// returns ErrNoDriver when there is no driver. g.mu must be held.
func (g *GPUs) deviceByUUID(uuid string) (gonvml.Device, gpuRef, error) {
	ref := gpuRef{index: -1, uuid: uuid}
	if !g.ensureInit() {
		return nil, ref, ErrNoDriver
	}
	dev, ret := call1(func() (gonvml.Device, gonvml.Return) { return g.lib.DeviceGetHandleByUUID(uuid) })
	if ret != gonvml.SUCCESS {
		if ret == gonvml.ERROR_NOT_FOUND || ret == gonvml.ERROR_INVALID_ARGUMENT {
			return nil, ref, fmt.Errorf("no GPU with UUID %q on this machine (`gpu-bootstrap inventory` lists them)", uuid)
		}
		return nil, ref, fmt.Errorf("looking up GPU %s: %w", uuid, explain(ret))
	}
	if index, ret := call1(dev.GetIndex); ret == gonvml.SUCCESS {
		ref.index = index
	}
	return dev, ref, nil
}

// gpuRef names a GPU in error messages: "GPU 3 (GPU-8f6c…)".
type gpuRef struct {
	index int
	uuid  string
}

func (r gpuRef) String() string {
	if r.index < 0 {
		return fmt.Sprintf("GPU %s", r.uuid)
	}
	return fmt.Sprintf("GPU %d (%s)", r.index, r.uuid)
}

// explain wraps an NVML return code with what it means for the user; the
// code stays reachable through errors.Is.
func explain(ret gonvml.Return) error {
	switch ret {
	case gonvml.ERROR_NO_PERMISSION:
		return fmt.Errorf("%w: needs root (run gpu-bootstrap as root)", ret)
	case gonvml.ERROR_NOT_SUPPORTED:
		return fmt.Errorf("%w: this GPU does not support it", ret)
	case gonvml.ERROR_FUNCTION_NOT_FOUND:
		return fmt.Errorf("%w: the installed NVML library does not provide this call", ret)
	case gonvml.ERROR_GPU_IS_LOST:
		return fmt.Errorf("%w: the GPU has fallen off the bus; reset it or reboot", ret)
	case gonvml.ERROR_RESET_REQUIRED:
		return fmt.Errorf("%w: reset the GPU (nvidia-smi -r) or reboot first", ret)
	case gonvml.ERROR_IN_USE:
		return fmt.Errorf("%w: stop the processes using the GPU first", ret)
	}
	return ret
}

// callReturn, call1 and call2 call one NVML function. A binding that
// does not implement it reads as ERROR_FUNCTION_NOT_FOUND instead of
// crashing the process: go-nvml's mocks panic on every call whose Func field
// a test left nil, and a health probe must not die because one optional
// reading is missing. Any other panic is re-raised.
func callReturn(f func() gonvml.Return) (ret gonvml.Return) {
	defer recoverUnimplemented(&ret)
	return f()
}

func call1[A any](f func() (A, gonvml.Return)) (a A, ret gonvml.Return) {
	defer recoverUnimplemented(&ret)
	return f()
}

func call2[A, B any](f func() (A, B, gonvml.Return)) (a A, b B, ret gonvml.Return) {
	defer recoverUnimplemented(&ret)
	return f()
}

func recoverUnimplemented(ret *gonvml.Return) {
	r := recover()
	if r == nil {
		return
	}
	if msg, ok := r.(string); ok && strings.Contains(msg, "method is nil but") {
		*ret = gonvml.ERROR_FUNCTION_NOT_FOUND
		return
	}
	panic(r)
}

// unreported says a per-field reading is simply not available on this GPU or
// to this user, which leaves the field nil rather than being an error.
func unreported(ret gonvml.Return) bool {
	switch ret {
	case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_NO_PERMISSION, gonvml.ERROR_FUNCTION_NOT_FOUND:
		return true
	}
	return false
}

// deviceFatal says a return code means the GPU itself is unusable, so its
// other readings are not attempted.
func deviceFatal(ret gonvml.Return) bool {
	switch ret {
	case gonvml.ERROR_GPU_IS_LOST, gonvml.ERROR_RESET_REQUIRED, gonvml.ERROR_UNINITIALIZED:
		return true
	}
	return false
}
