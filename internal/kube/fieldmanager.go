package kube

// FieldManager is the field manager this provider names in every write it
// makes to the API server (server-side apply, create, update), so that
// `kubectl get -o yaml --show-managed-fields` tells which fields Terraform owns.
const FieldManager = "terraform-provider-gpu"
