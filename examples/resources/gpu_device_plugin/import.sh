# A device plugin is imported by the namespace and name of its DaemonSet.
terraform import gpu_device_plugin.nvidia nvidia-device-plugin/nvidia-device-plugin
