// Package awsemu is the testbed's AWS backend: an emulator of the parts of
// EKS, EC2, Auto Scaling and STS that gpu_node_group and the EC2
// inventory call, served over HTTP on loopback (one port per service, so
// that AWS_ENDPOINT_URL_EKS, _EC2, _AUTO_SCALING and _STS point the AWS
// CLI and the SDKs at it), plus the token webhook through which the
// testbed's kube-apiserver accepts EKS tokens. Start it as a
// testbed.Backend before the k8s cluster, whose API server is the EKS
// cluster's endpoint and into which node groups register kwok nodes:
//
//	emu := awsemu.New(awsemu.Options{Cluster: cluster})
//	cluster := k8s.New(k8s.Options{TokenWebhook: emu})
//	testbed.Start(ctx, testbed.Options{Backends: []testbed.Backend{emu, cluster}})
//
// # What it reproduces, and from where
//
// Wire formats, as aws-sdk-go-v2's protocol code (smithy-go
// transport/http/protocol: restjson1, ec2query, awsquery) and its EC2,
// Auto Scaling and STS deserializers.go read them:
//   - EKS, REST-JSON: the paths of the EKS API reference; errors with the
//     code in X-Amzn-ErrorType and {"message"} in the body; timestamps as
//     epoch seconds.
//   - EC2, EC2 query: <ActionResponse> with lowerCamel members and lists of
//     <item>; errors as <Response><Errors><Error><Code><Message>.
//   - Auto Scaling and STS, AWS query: <ActionResponse><ActionResult> with
//     lists of <member>; errors as <ErrorResponse><Error><Type><Code><Message>.
//
// Authentication: every call must be signed with Signature Version 4 by
// AccessKeyID/SecretAccessKey for the emulated region (any region for
// STS) and the service's signing name. The signature is recomputed with
// the SDK's own signer (aws/signer/v4) over the headers the request says
// it signed, its X-Amz-Date and payload hash; the date may be 15 minutes
// off. Failures are answered as each service documents its common errors
// (EC2 errors-overview.html, "Common Errors" of the Auto Scaling and STS
// API references) and, for EKS, whose REST front end answers with its own
// codes, as clients have reported them (aws/aws-sdk-go#3987:
// InvalidSignatureException; RhinoSecurityLabs/pacu#410:
// UnrecognizedClientException): a wrong secret gets EKS 403
// InvalidSignatureException, EC2 401 AuthFailure, Auto Scaling and STS
// 403 SignatureDoesNotMatch; an unknown access key EKS 403
// UnrecognizedClientException, EC2 401 AuthFailure, Auto Scaling and STS
// 403 InvalidClientTokenId; a stale date the signature error ("Signature
// expired"), EC2 RequestExpired.
//
// EKS (API reference, CreateNodegroup, UpdateNodegroupConfig,
// UpdateNodegroupVersion, DescribeUpdate, TagResource): one cluster,
// Options.ClusterName, ACTIVE, Kubernetes ClusterVersion(), whose endpoint is
// the testbed's kube-apiserver and whose certificateAuthority.data is the
// base64 of the testbed CA; DescribeCluster, ListClusters,
// CreateNodegroup, DescribeNodegroup, ListNodegroups (maxResults,
// nextToken), DeleteNodegroup, UpdateNodegroupConfig,
// UpdateNodegroupVersion, DescribeUpdate, TagResource, UntagResource,
// ListTagsForResource.
//   - CreateNodegroup: clientRequestToken idempotency (the same token
//     returns the same group); a name in use is 409 ResourceInUseException,
//     answered before any other validation (as the AWS CLI shows EKS does);
//     InvalidParameterException for: a name that is not 1-63 letters,
//     digits, - and _; a node role that is not arn:aws:iam::<12
//     digits>:role/<name>; no subnets or an unknown subnet; an unknown AMI
//     or capacity type; CUSTOM without a launch template; a launch
//     template with diskSize or remoteAccess ("don't specify diskSize, or
//     remoteAccess" with launchTemplate); a launch template with both or
//     neither of id and name; an instance type not in internal/ec2catalog
//     or of another architecture than the AMI type ("[g5g.xlarge] is not a
//     valid instance type for requested amiType AL2023_x86_64_NVIDIA");
//     scalingConfig min < 0, max < 1, min > max or desired outside
//     [min, max]; label keys and values longer than 63 characters; more
//     than 50 taints, a taint effect other than NO_SCHEDULE, NO_EXECUTE,
//     PREFER_NO_SCHEDULE, a taint key or value against the User Guide's
//     rule (node-taints-managed-node-groups.html: begins with a letter or
//     number; letters, numbers, '-', '.', '_'; a key optionally after a DNS
//     subdomain prefix and '/'); updateConfig without exactly one of
//     maxUnavailable and maxUnavailablePercentage (1..100) or with an
//     updateStrategy other than DEFAULT or MINIMAL; nodeRepairConfig with a
//     count and the percentage of one bound both set, a count below 1, a
//     percentage outside 1..100, an override without all four of its
//     values or with a repairAction other than Replace, Reboot, NoAction
//     (API_NodeRepairConfig, API_NodeRepairConfigOverrides); a version other
//     than the cluster's. Defaults as EKS documents them: amiType
//     AL2023_x86_64_STANDARD, capacityType ON_DEMAND, instanceTypes
//     [t3.medium], diskSize 20 (none with a launch template), scaling 1/2/2,
//     updateConfig maxUnavailable 1. updateConfig and nodeRepairConfig are
//     echoed as sent; UpdateNodegroupConfig merges an updateConfig into the
//     group's (a bound replaces both bounds, a strategy the strategy) and
//     replaces the nodeRepairConfig whole, with update params
//     UpdateStrategy, NodeRepairEnabled and NodeRepairConfig.
//   - Lifecycle: CREATING, then after ActiveDelay ACTIVE (or CREATE_FAILED
//     with the health issue of FailNextNodegroupCreate, or
//     AsgInstanceLaunchFailures when no subnet's AZ offers the instance
//     type); an update makes it UPDATING and an InProgress update, ACTIVE
//     and Successful after ActiveDelay (an update call repeated with its
//     clientRequestToken returns the same update); another update meanwhile, or a
//     delete while CREATING or UPDATING, is 409 ResourceInUseException;
//     delete makes it DELETING, then gone (ResourceNotFoundException).
//   - Each node group owns one Auto Scaling group, eks-<nodegroup>-<uuid>,
//     listed in resources.autoScalingGroups and tagged as EKS tags it
//     (eks:cluster-name, eks:nodegroup-name,
//     k8s.io/cluster-autoscaler/enabled, k8s.io/cluster-autoscaler/<cluster>,
//     kubernetes.io/cluster/<cluster>); its sizes follow scalingConfig.
//   - Nodes: NodeJoinDelay after ACTIVE, desiredSize kwok nodes register,
//     named ip-10-0-<n>-<m>.<region>.compute.internal, spread over the
//     subnets' AZs that offer the instance type, with the instance type's
//     hardware from internal/ec2catalog, the labels
//     eks.amazonaws.com/nodegroup, eks.amazonaws.com/capacityType,
//     eks.amazonaws.com/nodegroup-image, node.kubernetes.io/instance-type,
//     topology.kubernetes.io/zone and region, the group's labels, and the
//     group's taints only. AL2 and AL2023 nodes have no nvidia.com/gpu
//     until a device-plugin pod runs on them (the k8s package's simulator);
//     Bottlerocket NVIDIA nodes have it at once. No GPU Feature Discovery
//     labels. Scaling adds and removes nodes (the oldest go first, as
//     the group's OldestInstance termination policy has it); a
//     label or taint update is applied to the existing nodes; delete
//     removes them.
//
// EKS node auto repair (EKS User Guide node-repair.html and
// node-health-nma.html; API_NodeRepairConfig, API_NodeRepairConfigOverrides;
// node_repair_policy.go cites each rule): for every group whose
// nodeRepairConfig is enabled, an informer follows its nodes' conditions.
// A node whose watched condition stays unhealthy for the wait gets the
// repair action. Watched: AcceleratedHardwareReady False (10 minutes),
// ContainerRuntimeReady, KernelReady, NetworkingReady and StorageReady
// False and Ready False or Unknown (30 minutes); an override naming the
// condition and the reason sets the wait (minRepairWaitTimeMins) and the
// action first. Default actions: Replace, except the
// AcceleratedHardwareReady reasons node-health-nma.html lists otherwise
// (NvidiaXID13, 31, 48, 63, 64, 94 and 95Error Reboot; DCGMError,
// DCGMDiagnosticFailure, DCGMHealthCode<N> and NvidiaDeviceCountMismatch
// none). Replace terminates the instance and the Auto Scaling group
// launches another (a new instance ID and node name; the old node leaves
// the cluster; the group is back at its desired size); Reboot keeps the
// node and writes a new status.nodeInfo.bootID (the testbed's simulators
// restart the node's agents when it changes); NoAction does nothing. A
// condition that turns healthy before the wait starts it again. At most
// maxParallelNodesRepairedCount (or Percentage of the unhealthy nodes)
// repairs run at once; no repair starts while more nodes are unhealthy
// than maxUnhealthyNodeThresholdCount (or Percentage of the group), by
// default while the group has more than five nodes and more than 20% of
// them are unhealthy; repairs in progress continue. Starts, ends and
// pauses are written to the emulator's log; NodeRepairStatus returns them.
// Options.RepairMinute (default a minute; SetRepairMinute, `serve-aws
// --repair-minute`) is how long one minute of these waits lasts.
//
// EC2 (API reference): DescribeInstanceTypes (InstanceType.N, where an
// unknown name is InvalidInstanceType; filters instance-type with * and ?
// wildcards, processor-info.supported-architecture, current-generation,
// bare-metal, vcpu-info.default-vcpus, memory-info.size-in-mib; an
// undocumented filter such as gpu-info.name is refused as EC2 refuses it;
// MaxResults 5..100 and NextToken) with ProcessorInfo, VCpuInfo, MemoryInfo, GpuInfo and
// NeuronInfo from internal/ec2catalog; DescribeInstanceTypeOfferings
// (LocationType region, availability-zone or availability-zone-id;
// filters location, instance-type); DescribeSubnets (SubnetId.N, where an
// unknown ID is InvalidSubnetID.NotFound; filters subnet-id,
// availability-zone, vpc-id); DescribeSpotPriceHistory (one price per
// type, AZ and product at the start of the current hour). The test VPC
// has four subnets, subnet-0a1b2c3d4e5f60001 to ...0004 in the region's
// AZs a to d. Every catalog type is offered in AZs a, b and c; AZ d lacks
// p3, p4d, p4de, p5, p5e, p5en, trn1, dl1, g6e and gr6.
//
// EC2 capacity (API reference; EC2 User Guide "Capacity Blocks for ML"):
// the account's reservations come from AddCapacityReservation or
// Options.CapacityReservations (`gpu-testbed serve-aws
// --capacity-reservations '<JSON seeds>'`); none by default. Their state
// follows the wall clock: scheduled before the start, active, expired from
// the end on (availableInstanceCount 0 then); EndCapacityReservation ends
// one now. A Capacity Block is reservationType capacity-block,
// instanceMatchCriteria targeted, with a capacityBlockId; EC2 terminates
// its instances 30 minutes before its end ("Monitor Capacity Blocks using
// EventBridge": the warning 40 minutes before, termination 10 minutes
// later; Options.BlockReclaimLead), the block staying active until then.
//   - DescribeCapacityReservations: CapacityReservationId.N (a malformed ID
//     is InvalidCapacityReservationId.Malformed, an unknown one
//     InvalidCapacityReservationId.NotFound); the filters the API reference
//     lists (instance-type, owner-id, instance-platform, availability-zone,
//     tenancy, outpost-arn, state, start-date, end-date, end-date-type,
//     instance-match-criteria, placement-group-arn; it lists no
//     reservation-type, which is refused as an invalid filter);
//     MaxResults 1..1000 and NextToken. availableInstanceCount is the total
//     less the group instances running in it (capacityAllocationSet "used").
//   - DescribeCapacityBlocks (CapacityBlockId.N; filters capacity-block-id,
//     ultraserver-type, availability-zone, start-date, end-date,
//     create-date, state, tags), DescribeCapacityBlockStatus (interconnect
//     always ok, no unavailable capacity; filter interconnect-status),
//     DescribeCapacityReservationTopology (three hashed network nodes for
//     the catalog types the "Prerequisites for Amazon EC2 topology" page
//     lists, while active; filters availability-zone, instance-type;
//     MaxResults 1..10, not with IDs).
//   - DescribeCapacityBlockOfferings: CapacityDurationHours, InstanceType
//     and InstanceCount required (MissingParameter); durations in 1-day
//     steps to 14 days and 7-day steps to 182 days, 1..64 instances
//     (InvalidParameterValue otherwise), as "Find and purchase Capacity
//     Blocks" says; up to 6 offerings, two AZs a day on the first three
//     days at or after StartDateRange (default now) that end by
//     EndDateRange, every block starting and ending at 11:30 UTC; only the
//     families sold as blocks (supportedUsageClasses capacity-block) have
//     offerings. IDs, dates and UpfrontFee (USD: 1.5 times the synthetic
//     spot price, 1% more per day ahead, times hours and instances) are the
//     same for the same question on the same day.
//   - DescribeCapacityBlockExtensionOfferings: one offering starting at the
//     block's end, for an active or scheduled block asked about between 56
//     days and 1 hour before its end, whose total stays within 182 days
//     ("Extend Capacity Blocks"); none for an On-Demand Capacity Reservation.
//
// EC2 launch templates (API reference): CreateLaunchTemplate (name of 3 to
// 128 of [a-zA-Z0-9().-/_], else InvalidLaunchTemplateName.MalformedException;
// a name in use is InvalidLaunchTemplateName.AlreadyExistsException;
// TagSpecification.N for launch-template), CreateLaunchTemplateVersion
// (SourceVersion: the new version starts from it and each member it names
// replaces the source's), DescribeLaunchTemplates (LaunchTemplateId.N,
// LaunchTemplateName.N; filters create-time, launch-template-name,
// tag:<key>, tag-key), DescribeLaunchTemplateVersions (Versions.N with
// $Latest and $Default; every template's $Latest/$Default without an ID
// or name; MinVersion/MaxVersion; filters image-id, instance-type,
// is-default-version, create-time), DeleteLaunchTemplate. Unknown IDs are
// InvalidLaunchTemplateId.NotFound (malformed: .Malformed), names
// InvalidLaunchTemplateName.NotFoundException, versions
// InvalidLaunchTemplateId.VersionNotFound. The data kept and echoed:
// ImageId, InstanceType, UserData, BlockDeviceMappings (with Ebs),
// TagSpecifications, InstanceMarketOptions (MarketType spot,
// capacity-block, interruptible-capacity-reservation; SpotOptions) and
// CapacityReservationSpecification (preference capacity-reservations-only,
// open or none; a target by CapacityReservationId or
// CapacityReservationResourceGroupArn, not both).
//
// EKS node groups and capacity: a group whose launch template EC2 holds
// launches from the version it names (the default when none), takes the
// template's InstanceType (naming instanceTypes as well is
// InvalidParameterException), and CAPACITY_BLOCK needs a template with
// MarketType capacity-block ("Managed node groups with Capacity Blocks can
// only be created with custom launch templates", EKS User Guide). Its
// instances launch into the reservation the template targets, only in that
// reservation's AZ, each counting against it; a block that has not started
// launches nothing until its start, then the group fills. Without a target,
// an instance runs in an open On-Demand Capacity Reservation of its type in
// an AZ where one has room (preference none skips them), else on demand,
// unless SetOnDemandCapacity(type, zone, false) took that away. A launch
// EC2 refuses is the health issue AsgInstanceLaunchFailures, "Could not
// launch On-Demand (Capacity Block) Instances. <EC2 code> - <message>.
// Launching EC2 instance failed.", with ReservationCapacityExceeded (a
// group asking for more than its reservation holds launches what fits) or
// InsufficientInstanceCapacity; a create that launches nothing at all ends
// CREATE_FAILED with it. When a reservation ends (its timer or
// EndCapacityReservation) its instances' nodes leave the cluster and the
// group reports the failed relaunch; scaling in or deleting a group gives
// the capacity back.
//
// Auto Scaling (API reference): DescribeAutoScalingGroups (names;
// filters tag-key, tag-value, tag:<key>), CreateOrUpdateTags and
// DeleteTags (an unknown group is ValidationError; at most 50 tags per
// group, LimitExceeded), DescribeTags (filters auto-scaling-group, key,
// value, propagate-at-launch).
//
// STS: GetCallerIdentity answers CallerARN, CallerUserID and AccountID.
//
// Token webhook (TokenReview authentication.k8s.io/v1 at /authenticate,
// over TLS with a certificate from the testbed CA): a token is
// "k8s-aws-v1." and the unpadded base64url of a presigned STS
// GetCallerIdentity URL. As aws-iam-authenticator's server verifies it
// (pkg/token/token.go): the host must be the emulator's STS endpoint,
// Action GetCallerIdentity, Version 2011-06-15, X-Amz-Algorithm,
// Credential, Date, Expires, SignedHeaders and Signature present,
// x-k8s-aws-id among the signed headers, X-Amz-Date within the last 15
// minutes whatever X-Amz-Expires says. Where aws-iam-authenticator asks STS
// to check the signature, the emulator checks it itself with x-k8s-aws-id
// set to the cluster name, so a token for another cluster fails. A valid
// token is the cluster creator, as EKS maps it: user kubernetes-admin in
// system:masters, uid aws-iam-authenticator:<account>:<user id>.
//
// Test controls: ThrottleNext (EKS ThrottlingException 400, EC2
// RequestLimitExceeded 503, Auto Scaling and STS Throttling 400: codes the
// SDK's standard retryer retries), FailNextNodegroupCreate,
// SetActiveDelay, DeleteNodegroupOutOfBand, AutoScalingGroupTags,
// CallCounts, AddCapacityReservation, EndCapacityReservation,
// SetOnDemandCapacity, SetRepairMinute, NodeRepairStatus. They are also
// served as POST /_testbed/<control> (JSON) on the EKS port, which a
// testbed whose emulator runs as a process of its own (Options.Command,
// `gpu-testbed serve-aws`) uses.
//
// # What it does not reproduce
//
//   - Only one cluster; no cluster create, update or delete; no access
//     entries or aws-auth ConfigMap: every valid token is the admin.
//   - A node group may name a launch template EC2 does not hold (EKS
//     refuses one): it is taken as a name only, so that groups made before
//     the emulator held templates keep working. Of a template, only the
//     capacity targeting and instance type act on nodes (not AMI, user
//     data, disks or tags). A launch template version update replaces every
//     node at once (EKS rolls them, bounded by updateConfig); a Kubernetes
//     or release version update replaces none, so the update strategy
//     changes nothing observable. No remote access, Windows
//     nodes, or pagination of ListClusters.
//   - Node auto repair: the waits last Options.RepairMinute per minute
//     (tests shorten them) and count from when the emulator saw the
//     condition turn unhealthy. No node monitoring agent runs (the
//     testbed's health agent, or a test, writes the conditions). Where AWS
//     documents nothing, the choices are ours: an AcceleratedHardwareReady
//     reason the User Guide does not list (another XID, our agent's
//     NvidiaRowRemapFailure) is replaced, as EKS Auto Mode and Karpenter
//     replace for every AcceleratedHardwareReady repair; no parallel limit
//     by default; a percentage of unhealthy nodes rounds down, to at least
//     one; a node still unhealthy after a reboot is rebooted again after
//     another wait (never escalated to Replace); a replacement is in
//     progress until its node registers, a reboot until its boot ID is
//     written; a group that is CREATING or DELETING repairs nothing. No
//     zonal-shift pause, no Auto Mode or Karpenter repair. A group created
//     without updateStrategy or nodeRepairConfig reports none (EKS may
//     report DEFAULT and enabled false); the messages of the repair and
//     strategy checks are ours.
//   - EC2 capacity: no PurchaseCapacityBlock, CreateCapacityReservation,
//     Modify/Cancel, extensions or Capacity Reservation Fleets (buying is
//     not the provider's, and money is not the emulator's to take); no
//     billing, real prices (offerings and fees are synthetic), UltraServers,
//     Local Zones, shared or dedicated-tenancy reservations, placement
//     groups, or resource groups (a template targeting a resource group ARN
//     may use any of the account's reservations of its type). Only the
//     error codes are EC2's: the wording of the capacity and launch
//     template messages is the emulator's, and an unknown Capacity Block ID
//     matches nothing (the error code list names no code for it). A group
//     whose launches fail stays ACTIVE with its health issue (EKS may
//     report DEGRADED). EC2 emits no EventBridge events here.
//   - The wording of messages is close to AWS's, not always the same; an
//     UpdateNodegroupConfig that changes nothing is refused with
//     InvalidParameterException, as we believe EKS does.
//   - Spot prices are synthetic and deterministic (accelerators plus
//     vCPUs, a little more in each further AZ), not real prices or
//     history; offerings per AZ are this package's table, not a region's.
//   - No IAM: any role ARN of the right shape is accepted, and every call by
//     the test user is allowed. No STS session tokens, AssumeRole or
//     regional STS checks; SigV4A, chunked payload signing and presigned
//     URLs for calls other than the token are not accepted.
//   - No EC2 instances outside the Auto Scaling groups, no quotas other
//     than those above, no eventual consistency.
package awsemu
