package awsemu

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The node group statuses of the EKS API (NodegroupStatus).
const (
	statusCreating     = "CREATING"
	statusActive       = "ACTIVE"
	statusUpdating     = "UPDATING"
	statusDeleting     = "DELETING"
	statusCreateFailed = "CREATE_FAILED"
)

// Update statuses and types (UpdateStatus, UpdateType, UpdateParamType).
const (
	updateInProgress = "InProgress"
	updateSuccessful = "Successful"
	updateVersion    = "VersionUpdate"
	updateConfig     = "ConfigUpdate"
)

// nodegroup is one managed node group and what it owns.
type nodegroup struct {
	region  string
	doc     nodegroupDoc
	token   string // clientRequestToken of the create
	asgName string
	nodes   []groupNode // registered nodes, oldest first
	updates map[string]*updateDoc
	// updateTokens maps the clientRequestToken of each update call to
	// its update: the same token returns the same update.
	updateTokens map[string]string
	// pending is the update the current UPDATING applies.
	pending *pendingUpdate
	// repairs are node auto repair's repairs of the group's nodes, oldest
	// first; repairPaused says why no repair starts now (node_repair.go).
	repairs      []*NodeRepair
	repairPaused string
}

// groupNode is one instance of the group and the Kubernetes node it
// registers as.
type groupNode struct {
	instanceID, nodeName, zone, instanceType string
	// reservation is the capacity reservation the instance runs in
	// (capacity.go counts it against it); "" for on-demand or spot.
	reservation string
}

type pendingUpdate struct {
	id     string
	token  string // clientRequestToken
	config *updateNodegroupConfigRequest
	vers   *updateNodegroupVersionRequest
}

func nodegroupKey(cluster, name string) string { return cluster + "/" + name }

func (s *state) nodegroupARN(cluster, name, id string) string {
	return "arn:aws:eks:" + s.region + ":" + AccountID + ":nodegroup/" + cluster + "/" + name + "/" + id
}

func errNodegroupNotFound(cluster, name string) *apiError {
	return newError(http.StatusNotFound, "ResourceNotFoundException", "No node group found for name: %s.", name).
		with(map[string]string{"clusterName": cluster, "nodegroupName": name})
}

func errClusterNotFound(name string) *apiError {
	return newError(http.StatusNotFound, "ResourceNotFoundException", "No cluster found for name: %s.", name).
		with(map[string]string{"clusterName": name})
}

// errNodegroupBusy is the 409 for a call the group's status forbids, worded
// as EKS words a cluster's ("Cannot X because cluster Y currently has
// update Z in progress").
func errNodegroupBusy(ng *nodegroup, action string) *apiError {
	var err *apiError
	if ng.pending != nil {
		err = newError(http.StatusConflict, "ResourceInUseException", "Cannot %s because nodegroup %s currently has update %s in progress",
			action, ng.doc.NodegroupName, ng.pending.id)
	} else {
		err = newError(http.StatusConflict, "ResourceInUseException", "Cannot %s because nodegroup %s is currently in %s status",
			action, ng.doc.NodegroupName, ng.doc.Status)
	}
	return err.with(map[string]string{"clusterName": ng.doc.ClusterName, "nodegroupName": ng.doc.NodegroupName})
}

// createNodegroup records the group CREATING with its Auto Scaling group
// and schedules ACTIVE (or CREATE_FAILED).
// A name in use is answered before any other validation, as EKS does
// (the AWS CLI shows ResourceInUseException for a repeated create whatever
// else is wrong with it).
func (e *Emulator) createNodegroup(cluster string, req *createNodegroupRequest) (nodegroupDoc, *apiError) {
	e.mu.Lock()
	doc, done, err := e.existingNodegroup(cluster, req)
	e.mu.Unlock()
	if done {
		return doc, err
	}
	// A template's instance type is the group's (eks_launch_templates.go).
	templateType := e.templateInstanceType(req.LaunchTemplate)
	typesInBoth := templateType != "" && len(req.InstanceTypes) > 0
	if templateType != "" && len(req.InstanceTypes) == 0 {
		req.InstanceTypes = []string{templateType}
	}
	if err := validateCreate(req); err != nil {
		return nodegroupDoc{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if doc, done, err := e.existingNodegroup(cluster, req); done {
		return doc, err
	}
	s := e.st
	key := nodegroupKey(cluster, req.NodegroupName)
	for _, subnet := range req.Subnets {
		if _, ok := subnetZone(s.region, subnet); !ok {
			return nodegroupDoc{}, invalidParameter("The subnet ID '%s' does not exist (Service: AmazonEC2; Status Code: 400; Error Code: InvalidSubnetID.NotFound)", subnet)
		}
	}
	now := time.Now().UTC()
	id := newUUID()
	diskSize := req.DiskSize
	if diskSize == nil && req.LaunchTemplate == nil {
		twenty := int32(20)
		diskSize = &twenty
	}
	labels := map[string]string{}
	maps.Copy(labels, req.Labels)
	tags := map[string]string{}
	maps.Copy(tags, req.Tags)
	var lt *launchTemplateSpec
	if req.LaunchTemplate != nil {
		copied := *req.LaunchTemplate
		if err := s.checkGroupTemplate(req, &copied, typesInBoth); err != nil {
			return nodegroupDoc{}, err
		}
		if copied.ID == "" {
			copied.ID = "lt-0" + strings.ReplaceAll(id, "-", "")[:16]
		}
		if copied.Name == "" {
			copied.Name = "lt-for-" + req.NodegroupName
		}
		if copied.Version == "" {
			copied.Version = "1"
		}
		lt = &copied
	} else if err := s.checkGroupTemplate(req, nil, false); err != nil {
		return nodegroupDoc{}, err
	}
	updateCfg := defaultUpdateConfig()
	if req.UpdateConfig != nil {
		updateCfg = mergeUpdateConfig(updateCfg, req.UpdateConfig)
	}
	ng := &nodegroup{
		region:       s.region,
		token:        req.ClientRequestToken,
		asgName:      "eks-" + req.NodegroupName + "-" + id,
		updates:      map[string]*updateDoc{},
		updateTokens: map[string]string{},
		doc: nodegroupDoc{
			NodegroupName:  req.NodegroupName,
			NodegroupArn:   s.nodegroupARN(cluster, req.NodegroupName, id),
			ClusterName:    cluster,
			Version:        ClusterVersion(),
			ReleaseVersion: releaseVersionFor(req),
			CreatedAt:      epochSeconds(now),
			ModifiedAt:     epochSeconds(now),
			Status:         statusCreating,
			CapacityType:   req.CapacityType,
			ScalingConfig:  *req.ScalingConfig,
			InstanceTypes:  slices.Clone(req.InstanceTypes),
			Subnets:        slices.Clone(req.Subnets),
			RemoteAccess:   req.RemoteAccess,
			AmiType:        req.AmiType,
			NodeRole:       req.NodeRole,
			Labels:         labels,
			Taints:         slices.Clone(req.Taints),
			DiskSize:       diskSize,
			Health:         nodegroupHealth{Issues: []healthIssue{}},
			UpdateConfig:   updateCfg,
			NodeRepair:     cloneNodeRepair(req.NodeRepairConfig),
			LaunchTemplate: lt,
			Tags:           tags,
		},
	}
	s.nodegroups[key] = ng
	s.asgs[ng.asgName] = newAutoScalingGroup(s, ng)
	failure := s.failNextCreate
	s.failNextCreate = nil
	e.after(s.activeDelay, func() { e.finishCreate(key, ng, failure) })
	return ng.view(), nil
}

// existingNodegroup answers a create whose name is in use: the same
// group for the same clientRequestToken, else ResourceInUseException;
// done is false when the name is free. e.mu is held.
func (e *Emulator) existingNodegroup(cluster string, req *createNodegroupRequest) (nodegroupDoc, bool, *apiError) {
	if cluster != e.st.clusterName {
		return nodegroupDoc{}, true, errClusterNotFound(cluster)
	}
	ng, ok := e.st.nodegroups[nodegroupKey(cluster, req.NodegroupName)]
	if !ok {
		return nodegroupDoc{}, false, nil
	}
	if req.ClientRequestToken != "" && ng.token == req.ClientRequestToken {
		return ng.view(), true, nil
	}
	return nodegroupDoc{}, true, newError(http.StatusConflict, "ResourceInUseException",
		"NodeGroup already exists with name %s and cluster name %s", req.NodegroupName, cluster).
		with(map[string]string{"clusterName": cluster, "nodegroupName": req.NodegroupName})
}

// cloneNodeRepair is a copy of c that shares nothing with the request.
func cloneNodeRepair(c *nodeRepairConfig) *nodeRepairConfig {
	if c == nil {
		return nil
	}
	copied := *c
	copied.NodeRepairConfigOverrides = slices.Clone(c.NodeRepairConfigOverrides)
	return &copied
}

// releaseVersionFor is the AMI release version EKS reports: the latest of
// the cluster's minor version for EKS AMIs, none for CUSTOM.
func releaseVersionFor(req *createNodegroupRequest) string {
	switch {
	case req.ReleaseVersion != "":
		return req.ReleaseVersion
	case req.AmiType == "CUSTOM":
		return ""
	case strings.HasPrefix(req.AmiType, "BOTTLEROCKET_"):
		return "1.26.2-360b7a38"
	}
	return ClusterVersion() + ".4-20241121"
}

// view is a copy of the group's document for a response, encoded after
// e.mu is released: the document's pointers are only ever replaced, never
// written through.
func (ng *nodegroup) view() nodegroupDoc {
	d := ng.doc
	d.InstanceTypes = slices.Clone(d.InstanceTypes)
	d.Subnets = slices.Clone(d.Subnets)
	d.Labels = maps.Clone(d.Labels)
	d.Taints = slices.Clone(d.Taints)
	d.Tags = maps.Clone(d.Tags)
	d.Health.Issues = slices.Clone(d.Health.Issues)
	d.Resources = &nodegroupResources{AutoScalingGroups: []asgRef{{Name: ng.asgName}}}
	return d
}

func (e *Emulator) finishCreate(key string, ng *nodegroup, failure *healthIssue) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.st.nodegroups[key] != ng || ng.doc.Status != statusCreating {
		return
	}
	ng.doc.ModifiedAt = epochSeconds(time.Now())
	if len(ng.launchZones()) == 0 && *ng.doc.ScalingConfig.DesiredSize > 0 {
		// What the Auto Scaling group reports when EC2 refuses every launch.
		failure = &healthIssue{
			Code: "AsgInstanceLaunchFailures",
			Message: "Your requested instance type (" + ng.doc.InstanceTypes[0] + ") is not supported in your requested Availability Zones (" +
				strings.Join(ng.subnetZones(), ", ") + "). Launching EC2 instance failed.",
		}
	}
	if failure != nil {
		issue := *failure
		if len(issue.ResourceIDs) == 0 {
			issue.ResourceIDs = []string{ng.asgName}
		}
		ng.doc.Status = statusCreateFailed
		ng.doc.Health.Issues = []healthIssue{issue}
		return
	}
	ng.doc.Status = statusActive
	e.scaleTo(key, ng, int(*ng.doc.ScalingConfig.DesiredSize))
	if len(ng.nodes) == 0 && slices.ContainsFunc(ng.doc.Health.Issues, func(i healthIssue) bool { return i.Code == asgLaunchFailures }) {
		// EC2 refused every launch: the group does not come up.
		ng.doc.Status = statusCreateFailed
	}
}

// subnetZones are the AZs of the group's subnets.
func (ng *nodegroup) subnetZones() []string {
	var zones []string
	for _, subnet := range ng.doc.Subnets {
		if zone, ok := subnetZone(ng.region, subnet); ok && !slices.Contains(zones, zone) {
			zones = append(zones, zone)
		}
	}
	return zones
}

// startUpdate refuses an update unless the group is ACTIVE, records it
// InProgress and the group UPDATING, and schedules its completion.
func (e *Emulator) startUpdate(cluster, name string, p pendingUpdate, kind string, params []updateParam) (updateDoc, *apiError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cluster != e.st.clusterName {
		return updateDoc{}, errClusterNotFound(cluster)
	}
	key := nodegroupKey(cluster, name)
	ng, ok := e.st.nodegroups[key]
	if !ok {
		return updateDoc{}, errNodegroupNotFound(cluster, name)
	}
	if id, ok := ng.updateTokens[p.token]; ok && p.token != "" {
		return *ng.updates[id], nil
	}
	if ng.doc.Status != statusActive {
		return updateDoc{}, errNodegroupBusy(ng, kind)
	}
	if p.config != nil {
		if err := ng.checkConfigUpdate(p.config); err != nil {
			return updateDoc{}, err
		}
	}
	p.id = newUUID()
	u := &updateDoc{ID: p.id, Status: updateInProgress, Type: kind, Params: params, CreatedAt: epochSeconds(time.Now()), Errors: []errorDetail{}}
	ng.updates[p.id] = u
	if p.token != "" {
		ng.updateTokens[p.token] = p.id
	}
	ng.pending = &p
	ng.doc.Status = statusUpdating
	ng.doc.ModifiedAt = epochSeconds(time.Now())
	e.after(e.st.activeDelay, func() { e.finishUpdate(key, ng) })
	return *u, nil
}

// checkConfigUpdate validates an UpdateNodegroupConfig against the group.
func (ng *nodegroup) checkConfigUpdate(req *updateNodegroupConfigRequest) *apiError {
	if req.ScalingConfig != nil {
		merged := ng.doc.ScalingConfig
		if req.ScalingConfig.MinSize != nil {
			merged.MinSize = req.ScalingConfig.MinSize
		}
		if req.ScalingConfig.MaxSize != nil {
			merged.MaxSize = req.ScalingConfig.MaxSize
		}
		if req.ScalingConfig.DesiredSize != nil {
			merged.DesiredSize = req.ScalingConfig.DesiredSize
		}
		if err := validateScaling(merged); err != nil {
			return err
		}
	}
	if req.Labels != nil {
		if err := validateLabels(req.Labels.AddOrUpdateLabels); err != nil {
			return err
		}
		for _, key := range req.Labels.RemoveLabels {
			if _, add := req.Labels.AddOrUpdateLabels[key]; add {
				return invalidParameter("The label %s is both added and removed.", key)
			}
		}
	}
	if req.Taints != nil {
		if err := validateTaints(req.Taints.AddOrUpdateTaints); err != nil {
			return err
		}
		if n := len(applyTaints(ng.doc.Taints, req.Taints)); n > maxTaints {
			return invalidParameter("A node group can have at most %d taints, not %d.", maxTaints, n)
		}
	}
	if req.UpdateConfig != nil {
		if err := validateUpdateConfig(*mergeUpdateConfig(ng.doc.UpdateConfig, req.UpdateConfig)); err != nil {
			return err
		}
	}
	return validateNodeRepair(req.NodeRepairConfig)
}

func applyTaints(current []eksTaint, u *taintsUpdate) []eksTaint {
	out := slices.Clone(current)
	for _, t := range u.AddOrUpdateTaints {
		out = slices.DeleteFunc(out, func(c eksTaint) bool { return c.Key == t.Key && c.Effect == t.Effect })
		out = append(out, t)
	}
	for _, t := range u.RemoveTaints {
		out = slices.DeleteFunc(out, func(c eksTaint) bool {
			return c.Key == t.Key && (t.Effect == "" || c.Effect == t.Effect)
		})
	}
	return out
}

func (e *Emulator) finishUpdate(key string, ng *nodegroup) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.st.nodegroups[key] != ng || ng.doc.Status != statusUpdating || ng.pending == nil {
		return
	}
	p := ng.pending
	ng.pending = nil
	if c := p.config; c != nil {
		var removed []string
		if c.Labels != nil {
			removed = c.Labels.RemoveLabels
			for k, v := range c.Labels.AddOrUpdateLabels {
				ng.doc.Labels[k] = v
			}
			for _, k := range c.Labels.RemoveLabels {
				delete(ng.doc.Labels, k)
			}
		}
		if c.Taints != nil {
			ng.doc.Taints = applyTaints(ng.doc.Taints, c.Taints)
		}
		if c.UpdateConfig != nil {
			ng.doc.UpdateConfig = mergeUpdateConfig(ng.doc.UpdateConfig, c.UpdateConfig)
		}
		if c.NodeRepairConfig != nil {
			ng.doc.NodeRepair = cloneNodeRepair(c.NodeRepairConfig)
		}
		if sc := c.ScalingConfig; sc != nil {
			if sc.MinSize != nil {
				ng.doc.ScalingConfig.MinSize = sc.MinSize
			}
			if sc.MaxSize != nil {
				ng.doc.ScalingConfig.MaxSize = sc.MaxSize
			}
			if sc.DesiredSize != nil {
				ng.doc.ScalingConfig.DesiredSize = sc.DesiredSize
			}
		}
		if c.Labels != nil || c.Taints != nil {
			e.relabelNodes(ng, removed)
		}
	}
	if v := p.vers; v != nil {
		if v.Version != "" {
			ng.doc.Version = v.Version
		}
		if v.ReleaseVersion != "" {
			ng.doc.ReleaseVersion = v.ReleaseVersion
		}
		if v.LaunchTemplate != nil && ng.doc.LaunchTemplate != nil && v.LaunchTemplate.Version != "" {
			// A new value, not an edit: views handed out share the old one.
			lt := *ng.doc.LaunchTemplate
			lt.Version = v.LaunchTemplate.Version
			ng.doc.LaunchTemplate = &lt
			// EKS rolls every node onto the new version (EKS User Guide,
			// "Managed node update behavior"): here all at once, so that
			// the new nodes launch where the new version says (a new
			// capacity reservation) and the old ones free theirs.
			replaced := ng.nodes
			ng.nodes = nil
			e.removeNodes(replaced)
		}
	}
	ng.doc.Status = statusActive
	ng.doc.ModifiedAt = epochSeconds(time.Now())
	ng.updates[p.id].Status = updateSuccessful
	e.scaleTo(key, ng, int(*ng.doc.ScalingConfig.DesiredSize))
	// A new nodeRepairConfig applies to the nodes' conditions at once.
	e.evaluateRepairs(time.Now())
}

// deleteNodegroup marks the group DELETING and schedules its removal.
func (e *Emulator) deleteNodegroup(cluster, name string) (nodegroupDoc, *apiError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cluster != e.st.clusterName {
		return nodegroupDoc{}, errClusterNotFound(cluster)
	}
	key := nodegroupKey(cluster, name)
	ng, ok := e.st.nodegroups[key]
	if !ok {
		return nodegroupDoc{}, errNodegroupNotFound(cluster, name)
	}
	switch ng.doc.Status {
	case statusDeleting:
		return ng.view(), nil
	case statusCreating, statusUpdating:
		return nodegroupDoc{}, errNodegroupBusy(ng, "DeleteNodegroup")
	}
	ng.doc.Status = statusDeleting
	ng.doc.ModifiedAt = epochSeconds(time.Now())
	e.after(e.st.activeDelay, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.st.nodegroups[key] == ng {
			e.removeNodegroup(key, ng)
		}
	})
	return ng.view(), nil
}

// removeNodegroup forgets the group and its Auto Scaling group and
// deregisters its nodes. e.mu is held.
func (e *Emulator) removeNodegroup(key string, ng *nodegroup) {
	delete(e.st.nodegroups, key)
	delete(e.st.asgs, ng.asgName)
	e.removeNodes(ng.nodes)
	ng.nodes = nil
}
