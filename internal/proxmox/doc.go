// Package proxmox is the provider's Proxmox VE backend for gpu_passthrough_vm
// and gpu_inventory source "proxmox": every call to a Proxmox VE API goes
// through it, over github.com/Telmate/proxmox-api-go's Client (session, token
// or ticket login, GET/POST/PUT helpers). It lists PCI functions, mdev types,
// cluster PCI mappings, guests and permissions for plan-time checks, and
// creates (or clones), configures, starts, reads, updates and destroys VMs
// with GPUs passed through as hostpciN.
//
// Every asynchronous call's task is followed through its UPID on
// /nodes/{node}/tasks/{upid}/status with backoff polling (100 ms growing ×1.5
// up to 2 s, bounded by the context) rather than the library's fixed 2 s
// sleep; a failed task comes back as *TaskError with its exit status and the
// last lines of its log. hostpciN values are written by HostPCIValue with
// rombar always explicit: this library version writes rombar=0 when its
// ROMbar is nil, so nil never reaches it.
//
// It must not know Terraform: callers hand it typed specs (VMSpec) and get
// typed answers and errors back. TLS is verified against the given CA (or the
// system roots) unless Insecure is set; passwords, token secrets and tickets
// are never logged or put into errors.
package proxmox
