// Package eks is the provider's AWS backend: every call to EKS, EC2, Auto
// Scaling and STS goes through it. It creates, reads, updates and deletes EKS
// managed node groups (waiting on EKS's own status with backoff polling),
// answers instance-type facts for plan-time checks (cached per Client), lists
// the EC2 GPU catalog for gpu_inventory, keeps the cluster-autoscaler's
// scale-from-zero tags on a node group's Auto Scaling groups, and mints EKS
// bearer tokens (presigned STS GetCallerIdentity, as aws-iam-authenticator
// does) so the Kubernetes side needs no CLI.
//
// It must not know Terraform: callers hand it typed specs (NodeGroupSpec,
// CatalogFilter) and get typed answers and errors back. Credentials come from
// the SDK's default chain; secrets and tokens are never logged.
package eks
