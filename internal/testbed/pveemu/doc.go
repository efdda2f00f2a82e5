// Package pveemu is the Proxmox VE backend of the testbed: an emulator of
// PVE 9.1's REST API (/api2/json: pve-manager 9.1.9, qemu-server 9.1.9,
// QEMU 10.1; parameters from pve-docs 9.1.3's apidata,
// shared/reference/pve-api-9.1.json) on a loopback HTTPS port whose
// certificate the testbed CA signs, for the provider's gpu_passthrough_vm
// and gpu_inventory source "proxmox" and for any PVE client (Telmate's
// proxmox-api-go, proxmoxer, curl). It holds no real VMs: a VM is its
// config and a run state.
//
// It reproduces, from PVE's own sources:
//   - pve-http-server (PVE/APIServer/AnyEvent.pm, Formatter/Standard.pm):
//     the {"data": ...} envelope; errors with the message as the HTTP
//     reason phrase and {"data":null,"message":...} as the body, "errors"
//     per parameter with 400 "Parameter verification failed."; 501 for an
//     unknown method or path; authentication failures as a bare 401 with the
//     reason ("No ticket", "Authentication failed!" for any token or ticket
//     that fails verification as pve-manager 9.1.5 words it, the detail
//     only in the log, "Permission denied - invalid csrf token"); the
//     connection closed after an error.
//   - pve-manager's auth_handler and pve-access-control: API tokens in
//     "Authorization: PVEAPIToken=USER@REALM!NAME=SECRET" (or with a
//     space), tickets from POST /access/ticket (401 "authentication
//     failure") in the PVEAuthCookie cookie, a CSRFPreventionToken header
//     on every ticket call but GET. Users root@pam, terraform@pve (which
//     has Telmate's documented TerraformProv role on / with
//     VM.GuestAgent.Audit, and every Mapping privilege on /mapping/pci) and
//     terraform-prov@pve (bpg's and Telmate's documented setup); the ACL as
//     AccessControl::roles reads it (an entry on a deeper path replaces the
//     ones above) and RPCEnvironment::permissions (a privilege-separated
//     token has what both its ACL and its user give): TokenID (the
//     testbed's token, without separation: its user's privileges, enough
//     for this provider, bpg's and Telmate's), RoleTokenID (exactly the
//     documented role of internal/proxmox's privileges.go),
//     NoMappingTokenID (no /mapping/pci), UseOnlyTokenID (Mapping.Audit
//     and Mapping.Use only), AuditTokenID (VM.Audit on /vms only), and
//     RootTokenID without separation; PVE 9's privileges (VM.Monitor gone,
//     VM.GuestAgent.*); 403 "Permission check failed (path, privs)". The
//     read side of the access API: /access/users (full=1 with tokens),
//     /access/users/{userid}, its tokens, /access/permissions.
//   - pve-storage's Content.pm: local-lvm's volumes (the disks in the
//     node's VM configs) listed and read (path, size, format), with
//     check_volume_access.
//   - qemu-server's PVE/API2/Qemu.pm: create and clone write the config
//     (locked) in the request and finish in a qmcreate/qmclone task;
//     config POST is a qmconfig task, PUT is synchronous; check_hostpci_perm
//     ("only root can set 'hostpciN' config for non-mapped devices" for any
//     authid but root@pam, root's tokens included; Mapping.Use for a
//     mapping) runs at create in the request, at a config update in the
//     update function (so in the task for POST, in the request for PUT);
//     digest ("checksum mismatch (file change by other user?)"), delete=,
//     changes to a running VM kept in [PENDING] but for the
//     $fast_plug_option keys, cloud-init keys, and hotplugged NICs and
//     disks; "VM 100 is running - destroy failed" in the request; clone
//     only to the source's node ("VM uses local storage"), linked (the
//     default) only from a template; config locks refuse start, stop,
//     destroy and updates ("VM is locked (create)").
//   - Cluster PCI mappings (pve-manager's API2/Cluster/Mapping/PCI.pm,
//     pve-guest-common's PVE/Mapping/PCI.pm): list (with check-node's
//     "No mapping for node X." and "Invalid configuration: ..."
//     diagnostics), get (the file's digest, type "pci"), create
//     (Mapping.Modify on /mapping/pci; each map line checked against
//     $map_fmt's patterns; "pci ID 'x' already defined"), update
//     (Mapping.Modify on /mapping/pci/<id>; digest; delete=; map required
//     on every update, as check_config is called with create set) and
//     delete (Mapping.Modify on /mapping/pci), the errors under the file
//     lock prefixed as lock_pci_config does. Several map lines for one
//     node make a pool.
//   - vm_start (PVE/QemuServer.pm, PVE/QemuServer/PCI.pm, PCI/Mdev.pm,
//     OVMF.pm), all in the qmstart task: "q35 machine model is not
//     enabled" for pcie=1 without q35; "PCI device mapping not found";
//     each map line on the node checked with assert_valid ("PCI device
//     mapping invalid (hardware probably changed): ...", the mdev flag
//     included: a mapping of an mdev-capable card must set mdev); "no PCI
//     device found for"; a pool's alternatives tried in order, the first
//     that neither this VM's earlier hostpci nor a running VM holds taken,
//     else "could not find a free device for 'hostpciN'"
//     (choose_hostpci_devices); "PCI device '0000:01:00.0' already in use
//     by VMID '101'" for a single alternative (reserve_pci_usage, per
//     function, against running VMs on the node); an mdev created on the
//     first alternative with a free instance of the type, else "could not
//     create mediated device"; OVMF without efidisk0 starts with "WARN: no
//     efidisk configured! Using temporary efivars disk." and ends
//     "WARNINGS: 1". PVE does not check IOMMU groups: a GPU sharing its
//     group with a NIC starts (the provider's preflight is what refuses
//     it). Root-only start parameters (with-conntrack-state, ...) are
//     refused for others.
//   - The QEMU monitor (POST .../monitor, API2/Qemu.pm 'monitor'):
//     Sys.Audit or Sys.Modify on /vms/<vmid>, then per command what
//     API2/Qemu/HMPPerms.pm asks (info and help nothing more, Sys.Modify
//     on /, root@pam only; an unlisted command root@pam's alone); "ERROR:
//     VM 100 not running" for a stopped VM. "info qtree" lists each
//     passed-through device as QEMU's qdev_print does
//     (`dev: vfio-pci, id "hostpci0"` with `host = "0000:41:00.0"`, or
//     for an mdev `sysfsdev = "/sys/bus/mdev/devices/<uuid>"` and the
//     unset host "ffff:ff:ff.f"; "hostpci0.0", "hostpci0.1" for the
//     functions of a multifunction device): which device of a pool a VM
//     got.
//   - Tasks: UPIDs as PVE formats them, status running then stopped with
//     exitstatus "OK", "WARNINGS: n" or the error, a token's task with
//     "user" and "tokenid" apart (pve-manager API2/Tasks.pm); logs as
//     {n, t} lines ending "TASK OK" / "TASK ERROR: ..."; the node's task
//     list.
//   - Around the lifecycle, for other clients: reboot (applies pending
//     changes) and reset, directory indexes, node and cluster status,
//     local-lvm storage status, empty pools and HA lists.
//
// Host profiles (hosts.go): pve-a6000 (2× RTX A6000, VGA + audio per IOMMU
// group), pve-h100 (H100 PCIe in IOMMU group 30 with a ConnectX-7), pve-l40s
// (L40S with vGPU mdev types), pve-l40s-b (two L40S, IOMMU groups 50 and
// 51, in no mapping: room for a two-device pool), pve-cpu (no GPU); PCI
// mappings a6000-0, a6000-1 and l40s-vgpu; template "ubuntu-2404-cloud" as
// VMID 9000, 9001, 9002 and 9003 on the four GPU nodes. Test controls
// (FailNextTask, HoldNextTask and ReleaseHeldTasks, out-of-band changes to
// VMs, RemovePCIDevice and MovePCIDevice for a card pulled or moved to
// another slot and IOMMU group, RestorePCIDevice to put a pulled card
// back, Mapping, CallCounts) work in-process and,
// for a detached testbed, over POST /_testbed/... on the same port;
// AnswerDroppingProxy puts a proxy in front that loses the answer to a
// request PVE carried out.
//
// It does not reproduce: real QEMU (the monitor knows "info qtree",
// "info status" and "info version"; its qtree is abridged), PCI
// reservations by time (two starts racing for a pool), NVIDIA's sysfs
// vGPU interface of kernel 6.8+ (mdev types are the classic
// mdev_supported_types), legacy-igd's checks, an HA resource for
// ha-managed (accepted, not stored), storage beyond volume names on
// local-lvm, disk resize and moves, migration, snapshots, HA, pools,
// editing users, tokens and ACLs, the 3-second delay pveproxy adds to 401
// answers, ticket expiry, background_delay, proxying between nodes (a call for another
// node's VM answers as a missing config file), the other endpoints of the
// API, cloud-init snippets (a cicustom volume is not checked at start), and
// the full schema of every property string (hostpci values are parsed,
// other values are kept as given).
package pveemu
