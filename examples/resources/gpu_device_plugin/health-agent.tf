# NVIDIA's device plugin with gpu-bootstrap as each GPU node's health agent:
# it sets the AcceleratedHardwareReady node condition from what NVML reports
# (XID errors, lost GPUs, uncorrectable ECC errors, row-remap failures,
# missing GPUs) and serves dcgm-exporter-compatible metrics on port 9400.
# No image of gpu-bootstrap is published: build one from cmd/gpu-bootstrap.
resource "gpu_device_plugin" "nvidia" {
  namespace = "nvidia-device-plugin"

  health_agent {
    image = "registry.example.com/gpu-bootstrap:v1.0.0"

    # Keep new pods off a node while a fatal GPU fault stands.
    taint = true
    # The condition changes at most once a minute, so a flapping GPU does
    # not trigger node repair.
    damping_interval = "1m"
    # Faults that make the condition False; the others only warn (Events).
    fatal_faults = ["xid_critical", "gpu_lost", "ecc_uncorrectable", "row_remap_failure", "device_count"]
  }
}

output "health_agent_daemonset" {
  value = gpu_device_plugin.nvidia.health_agent.daemonset
}
