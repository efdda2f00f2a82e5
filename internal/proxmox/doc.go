// Package proxmox is the provider's Proxmox VE backend for gpu_passthrough_vm,
// gpu_pci_mapping and gpu_inventory source "proxmox": every call to a
// Proxmox VE API goes through it. It lists PCI functions, mdev types,
// cluster PCI mappings, guests and permissions, checks a VM's GPUs against
// them before anything is written, creates (or clones), configures,
// starts, reads, updates and destroys VMs with GPUs passed through as
// hostpciN, and creates, reads, updates and deletes cluster PCI mappings.
//
// The backend contract (the same in every backend of the provider):
//   - Read returns (T, found bool, error): a VM that does not exist is
//     found == false, not an error (ReadVM).
//   - Create returns (T, error), and a non-zero T means the object exists:
//     the caller keeps it in its state, tainted when the error is non-nil.
//     That holds when the wait after an answered create or clone request
//     is cut short (the context ends: Ctrl-C, a timeout), when a later step
//     fails, and when PVE carried out a request whose answer was lost (the
//     client chose the VM ID, so it reads the VM back to tell); those
//     reads run on a context of their own, detached from the ended one. A
//     zero T with an error means nothing was created (PVE refused the
//     request, or it was never sent). DeleteVM counts a VM that is gone as
//     deleted, and waits for a create or clone that still runs.
//   - Waits happen inside the calls, bounded by the context: each task is
//     followed through its UPID on /nodes/{node}/tasks/{upid}/status with
//     internal/poll (100 ms growing ×1.5 up to 2 s; 30 min when the context
//     has no deadline); a failed task is a *TaskError with its exit status
//     and the last lines of its log.
//   - Every API call is logged at debug level (tflog) once answered:
//     method, path, status, duration. Never a header, a body, a password,
//     a token secret, a ticket or a CSRF token; a secret parameter in a
//     query is redacted.
//   - Errors say what failed ("cloning ... to VM 101 on node pve") and
//     wrap the cause; they never name a Terraform attribute. Typed errors
//     let the caller point at its own settings: a *FieldError (and each
//     preflight Finding) names the Field of the VMSpec at fault;
//     *RestartNeededError, *CloneSourceError, ErrVMIDsTaken,
//     ErrNoCredentials, *APIError. A 401 is a *CredentialsError whose text
//     names the setting to fix with the names the caller gave in
//     Settings.Credentials, never its value.
//
// The facts and rules of Proxmox VE that a VM's GPUs depend on live here,
// each in one place, and callers map the answers to their own terms:
//   - The preflight (preflight.go): Preflight checks a VM's GPUs and VM ID
//     against the facts of its node (ReadNodeFacts, preflight_facts.go:
//     PCI functions, IOMMU groups, mappings, mdev types, guests, the
//     client's Mapping.Use) and returns typed Findings. It says which are
//     conflicts with other VMs (Finding.Conflict), which may be gone by the
//     time the VM is created; whether those block is the caller's choice.
//   - The hostpciN format (hostpci.go, with the PCI address rules of
//     qemu-server in pciaddress.go): HostPCIValue writes a value, always
//     with rombar, ParseHostPCI reads one back (a VM's own and other
//     guests' alike), ValidateGPUs checks GPUs before a write.
//   - The keys PVE changes only on a stopped VM (restart.go): NeedsStop,
//     which UpdateVM follows (it stops a running VM for them only when the
//     caller allows a restart or plans the VM stopped), and StopFields, the
//     same rule for a caller's plan.
//   - The hostpci limit: MaxHostPCI.
//   - PCI mappings (mapping_calls.go, mapping_entries.go): ReadPCIMapping,
//     CreatePCIMapping, UpdatePCIMapping (every entry sent as a repeated
//     map value, cleared settings as delete=, the digest read with the
//     mapping so a concurrent change is refused), DeletePCIMapping (a
//     mapping gone counts as deleted), MappingPrivileges. A map entry is
//     written by EntryForDevice and FormatMappingEntry from the node's
//     hardware, read by ParseMappingEntry, and checked by
//     PCIMapping.Check (CheckMappingEntry without the mapping), which is
//     pve-guest-common's assert_valid: the check qemu-server makes of each
//     entry before a VM with the mapping starts, so a plan refuses what
//     PVE would. A 403 is a *PermissionError naming PVE's path and
//     privileges.
//   - Pools (pools.go): a mapping with several entries on a node is a
//     pool; a VM starting with it gets the first entry no running VM
//     holds (qemu-server's choose_hostpci_devices). Which entry a running
//     VM got is in no config: the QEMU monitor tells (VMHostDevices, "info
//     qtree", ParseQtreeHostDevices), and ReadNodeFacts reads it
//     (ReadHostDevices) into Guest.HostDevices for the running guests that
//     use a pool on the node, no others. NodeFacts.Pool says who holds each
//     entry; a guest whose device is unknown is said to be so (Maybe),
//     never guessed. Preflight refuses a pool GPU when every entry is held
//     by other running VMs (FindingPoolExhausted, naming them) and an entry
//     PVE's check would fail (FindingMappingInvalid).
//
// Requests are its own (net/http, a 60 s bound per request, no retry).
// github.com/Telmate/proxmox-api-go's client is not used (it sleeps
// between retries of a GET past its context): only the library's
// validators are, for an API token ID and for hostpci values (ValidateGPUs).
//
// It must not know Terraform: callers hand it typed specs (VMSpec) and get
// typed answers and errors back. TLS is verified against the given CA (or
// the system roots) unless Insecure is set.
package proxmox
