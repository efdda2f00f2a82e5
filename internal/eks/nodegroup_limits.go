package eks

// MaxTaintsPerNodeGroup is EKS's limit on a node group's taints ("A maximum
// of 50 taints are allowed per node group": EKS User Guide, Node taints on
// managed node groups), counted over every taint EKS is sent.
const MaxTaintsPerNodeGroup = 50
