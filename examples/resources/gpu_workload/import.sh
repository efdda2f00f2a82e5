# A Job or a Deployment is imported by namespace/name; the kind is found.
terraform import gpu_workload.train default/train

# The kind can be named too.
terraform import gpu_workload.serve deployment/default/llm
