# A PyTorch training job on two H100s or two 80 GB A100s of one node. The gpu
# block becomes the nvidia.com/gpu limit, node affinity on the labels GPU
# Feature Discovery writes, and the nvidia.com/gpu toleration.
resource "gpu_workload" "train" {
  kind = "job"

  metadata {
    name      = "train"
    namespace = "default"
    labels    = { team = "ml" }
  }

  container {
    image          = "nvcr.io/nvidia/pytorch:24.05-py3"
    command        = ["torchrun", "--nproc_per_node=2", "train.py"]
    args           = ["--epochs=10", "--checkpoint-dir=/workspace/checkpoints"]
    env            = { NCCL_DEBUG = "WARN" }
    working_dir    = "/workspace"
    cpu_request    = "16"
    memory_request = "128Gi"
    memory_limit   = "192Gi"
  }

  gpu {
    count          = 2
    products       = ["NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB"]
    min_memory_gib = 79 # an "80 GB" H100 reports 79.6 GiB
  }

  job {
    backoff_limit = 2
  }

  # PyTorch DataLoader workers and NCCL need more than 64 MiB of /dev/shm.
  shm_size = "32Gi"

  # The dataset and checkpoints live on an existing PersistentVolumeClaim.
  volume {
    name       = "workspace"
    claim_name = "train-workspace"
    mount_path = "/workspace"
  }

  timeouts {
    create = "2h" # apply waits until the job completes
  }
}

output "train_status" {
  description = "Complete once the job has finished; the nodes it ran on."
  value       = "${gpu_workload.train.status} on ${join(", ", gpu_workload.train.node_names)}"
}

# An inference server on any GPU with at least 20 GiB and compute capability
# 8.6 or newer (A10G, L4, L40S, H100), updated in place when the image changes.
resource "gpu_workload" "serve" {
  kind = "deployment"

  metadata {
    name      = "llm"
    namespace = "default"
  }

  container {
    image = "vllm/vllm-openai:v0.5.0"
    args  = ["--model", "meta-llama/Meta-Llama-3-8B-Instruct"]
  }

  gpu {
    count                  = 1
    min_memory_gib         = 20
    min_compute_capability = "8.6"
  }

  deployment {
    replicas = 2
    strategy = "Recreate" # no spare GPUs needed to roll out a new version
  }
}

# Through Dynamic Resource Allocation (Kubernetes 1.34+, NVIDIA's DRA
# driver): one H100, else two 80 GB A100s on one node, on a driver that
# supports CUDA 12.4. The provider writes a ResourceClaimTemplate whose
# firstAvailable list holds the two choices as CEL selectors.
resource "gpu_workload" "finetune" {
  kind = "job"

  metadata {
    name = "finetune"
  }

  container {
    image   = "nvcr.io/nvidia/pytorch:24.05-py3"
    command = ["python", "finetune.py"]
  }

  gpu {
    allocation       = "dra"
    count            = 1
    products         = ["NVIDIA-H100-80GB-HBM3"]
    min_cuda_version = "12.4"

    alternative {
      count          = 2
      products       = ["NVIDIA-A100-SXM4-80GB"]
      min_memory_gib = 79
    }
  }
}
