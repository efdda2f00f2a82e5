// Package bootstrap turns a typed desired state for a GPU node (driver branch,
// container toolkit, persistence mode, container runtime, CDI spec, GPU
// settings) into a plan — the list of changes that would bring the host
// there — and applies it; Verify checks the result.
//
// Each step (driver.go, toolkit.go, persistence.go, runtime.go, cdi.go,
// gpusettings.go) has a Plan that only reads the host and returns Changes; an empty
// plan means the host already matches and Apply does nothing. Every side
// effect goes through Host: files under Host.Root (written atomically, with a
// backup of what they replace), commands through a Runner (no shell strings,
// so tests record them), and GPUs through nvml.Library. A target path is
// opened only through Host.Path, Host.ReadFile or Host.writeFile, which
// resolve it inside Root as a chroot would (rootpath.go); an os.* call on a
// path joined to Root by hand could follow a link out of an image.
package bootstrap
