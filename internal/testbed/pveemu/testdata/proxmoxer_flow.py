"""Drives the Proxmox VE emulator with Debian's python3-proxmoxer, as a
real PVE client: token and password logins, create/config/start of a GPU VM,
the node's PCI functions, tasks followed to their end. Prints one JSON
object per step; pveemu's TestProxmoxerClient checks them.

Environment: PM_HOST (127.0.0.1:PORT), PM_CA_CERT_FILE, PM_TOKEN_USER,
PM_TOKEN_NAME, PM_TOKEN_SECRET, PM_USER, PM_PASS, VMID, NODE, MAPPING.
"""
import json
import os
import sys
import time

from proxmoxer import ProxmoxAPI
from proxmoxer.core import ResourceException

env = os.environ
node, vmid = env["NODE"], int(env["VMID"])


def emit(step, **fields):
    fields["step"] = step
    print(json.dumps(fields), flush=True)


def wait(api, upid):
    """Follows a task with backoff until it stops (bounded)."""
    delay, deadline = 0.01, time.monotonic() + 30
    while time.monotonic() < deadline:
        status = api.nodes(node).tasks(upid).status.get()
        if status["status"] == "stopped":
            log = [line["t"] for line in api.nodes(node).tasks(upid).log.get(limit=500)]
            return status["exitstatus"], log
        time.sleep(delay)
        delay = min(delay * 2, 0.2)
    sys.exit("task %s did not stop in 30s" % upid)


token = ProxmoxAPI(env["PM_HOST"], user=env["PM_TOKEN_USER"], token_name=env["PM_TOKEN_NAME"],
                   token_value=env["PM_TOKEN_SECRET"], verify_ssl=env["PM_CA_CERT_FILE"])
emit("version", version=token.version.get()["version"])

pci = token.nodes(node).hardware.pci.get()
emit("pci", nvidia=sorted(f["id"] for f in pci if f["vendor"] == "0x10de"),
     groups={f["id"]: f["iommugroup"] for f in pci})

upid = token.nodes(node).qemu.post(vmid=vmid, name="proxmoxer", cores=2, memory=4096, machine="q35",
                                   bios="ovmf", efidisk0="local-lvm:1,efitype=4m",
                                   scsi0="local-lvm:16", net0="virtio,bridge=vmbr0", agent=1)
exit_status, log = wait(token, upid)
emit("create", upid=upid, exitstatus=exit_status, log=log)

upid = token.nodes(node).qemu(vmid).config.post(hostpci0="mapping=%s,pcie=1,rombar=1" % env["MAPPING"])
exit_status, log = wait(token, upid)
emit("config", exitstatus=exit_status, hostpci0=token.nodes(node).qemu(vmid).config.get()["hostpci0"])

try:
    token.nodes(node).qemu(vmid).config.put(hostpci1="0000:02:00,pcie=1,rombar=1")
    emit("raw", refused=False)
except ResourceException as err:
    emit("raw", refused=True, status=err.status_code, message=str(err))

upid = token.nodes(node).qemu(vmid).status.start.post()
exit_status, log = wait(token, upid)
current = token.nodes(node).qemu(vmid).status.current.get()
emit("start", exitstatus=exit_status, status=current["status"], qmpstatus=current["qmpstatus"])

root = ProxmoxAPI(env["PM_HOST"], user=env["PM_USER"], password=env["PM_PASS"], verify_ssl=env["PM_CA_CERT_FILE"])
upid = root.nodes(node).qemu(vmid).config.post(hostpci1="0000:02:00,pcie=1,rombar=1")
exit_status, log = wait(root, upid)
pending = {p["key"]: p.get("pending") for p in root.nodes(node).qemu(vmid).pending.get()}
emit("root", exitstatus=exit_status, pending_hostpci1=pending.get("hostpci1"))

upid = root.nodes(node).qemu(vmid).status.stop.post()
wait(root, upid)
upid = root.nodes(node).qemu(vmid).delete(purge=1)
exit_status, log = wait(root, upid)
emit("delete", exitstatus=exit_status)
