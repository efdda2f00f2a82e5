// Package eks is the provider's AWS backend: every call to EKS, EC2, Auto
// Scaling and STS goes through it. It creates, reads, updates and deletes EKS
// managed node groups, answers instance-type facts for plan-time checks
// (cached per Client), lists the EC2 GPU catalog for gpu_inventory, reads
// EC2 capacity (capacity*.go: the account's capacity reservations and
// Capacity Blocks for ML, with block status and network topology on
// request; the Capacity Block offerings EC2 sells, one call per NVIDIA GPU
// type; block extension offerings), makes the launch template a node group
// needs to launch into one (launch_template*.go: the provider's own, named
// and tagged, or a new version of the user's), keeps the
// cluster-autoscaler's scale-from-zero tags on a node group's Auto Scaling
// groups, and mints EKS bearer tokens (presigned STS GetCallerIdentity, as
// aws-iam-authenticator does) so the Kubernetes side needs no CLI.
//
// It keeps the contract every backend keeps (DESIGN.md, "The backend
// contract"):
//   - Read returns (T, found bool, error); not found is not an error
//     (ReadNodeGroup: found is false on ResourceNotFoundException;
//     CapacityReservation on InvalidCapacityReservationId.NotFound).
//   - Create returns (T, error); a non-zero T means the object exists and
//     the caller keeps it in state, tainted when the error is not nil.
//     CreateNodeGroup sends a client request token, so a create whose
//     answer was lost is retried into the same group; once EKS accepted the
//     create, the group comes back with any error: the wait cut short by
//     the context, CREATE_FAILED, DEGRADED; and when the context ends while
//     EKS's answer is on its way, the group is looked up and, if EKS
//     created it, comes back with the context's error. A zero NodeGroup
//     means EKS created nothing.
//   - Waits happen inside the calls, bounded by the caller's context,
//     through internal/poll on this package's schedules (wait.go).
//   - Every AWS operation is logged once, retries included, with its
//     duration and error code (log.go); parameters, credentials and tokens
//     never are.
//   - Errors are a lowercase "-ing" phrase with the identity, the cause
//     wrapped; typed where the caller acts on them (NodeGroupFailedError,
//     UpdateFailedError, NodeGroupGoneError, UnknownInstanceTypesError,
//     UnknownSubnetsError, ForeignLaunchTemplateError, CredentialsError,
//     ErrNoRegion). They never name a
//     Terraform attribute: the provider adds attribute paths.
//   - Facts and rules of EKS and EC2 (which AMI type runs on which
//     architecture, the node-template tag format) live here, once.
//
// It must not know Terraform: callers hand it typed specs (NodeGroupSpec,
// CatalogFilter) and get typed answers and errors back. Credentials come from
// the SDK's default chain; a call refused for them, or made without any,
// fails with a CredentialsError that names the credentials in use and where
// they came from, never a secret.
package eks
