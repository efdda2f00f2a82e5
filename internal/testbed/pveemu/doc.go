// Package pveemu is the Proxmox VE backend of the testbed: an emulator of
// PVE 8.4's REST API (/api2/json) on a loopback HTTPS port whose
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
//     on every ticket call but GET. Users root@pam and terraform@pve (which
//     has Telmate's documented TerraformProv role on /); the ACL as
//     AccessControl::roles reads it (an entry on a deeper path replaces the
//     ones above) and RPCEnvironment::permissions (a privilege-separated
//     token has what both its ACL and its user give): TokenID,
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
//   - vm_start (PVE/QemuServer.pm, PVE/QemuServer/PCI.pm, PCI/Mdev.pm,
//     OVMF.pm), all in the qmstart task: "q35 machine model is not
//     enabled" for pcie=1 without q35; "PCI device mapping not found";
//     "no PCI device found for"; "PCI device '0000:01:00.0' already in use
//     by VMID '101'" (reserve_pci_usage, per function, against running
//     VMs); mdev types without free instances ("could not create mediated
//     device"); OVMF without efidisk0 starts with "WARN: no efidisk
//     configured! Using temporary efivars disk." and ends "WARNINGS: 1".
//     PVE does not check IOMMU groups: a GPU sharing its group with a NIC
//     starts (the provider's preflight is what refuses it).
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
// (L40S with vGPU mdev types), pve-cpu (no GPU); PCI mappings a6000-0,
// a6000-1 and l40s-vgpu; template "ubuntu-2404-cloud" as VMID 9000, 9001
// and 9002 on the three GPU nodes. Test controls (FailNextTask,
// HoldNextTask and ReleaseHeldTasks, out-of-band changes, CallCounts) work
// in-process and, for a detached testbed, over POST /_testbed/... on the
// same port; AnswerDroppingProxy puts a proxy in front that loses the
// answer to a request PVE carried out.
//
// It does not reproduce: real QEMU, storage beyond volume names on
// local-lvm, disk resize and moves, migration, snapshots, HA, pools,
// editing users, tokens and ACLs, the 3-second delay pveproxy adds to 401
// answers, ticket expiry, background_delay, proxying between nodes (a call for another
// node's VM answers as a missing config file), the other endpoints of the
// API, cloud-init snippets (a cicustom volume is not checked at start), and
// the full schema of every property string (hostpci values are parsed,
// other values are kept as given).
package pveemu
