# Terraform 1.5 and later, and OpenTofu: import blocks, by namespace/name
# (the kind is found) or kind/namespace/name.
import {
  to = gpu_workload.train
  id = "default/train"
}

import {
  to = gpu_workload.serve
  id = "deployment/default/llm"
}
