# A DRA driver is imported by its namespace and release name: a Helm
# release `nvidia-dra-driver-gpu` in namespace nvidia-dra-driver-gpu (its
# DaemonSet is nvidia-dra-driver-gpu-kubelet-plugin).
terraform import gpu_dra_driver.nvidia nvidia-dra-driver-gpu/nvidia-dra-driver-gpu
