package awsemu

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// autoScalingGroup is the Auto Scaling group EKS creates for a node group.
type autoScalingGroup struct {
	name, nodegroupKey string
	min, max, desired  int32
	createdAt          time.Time
	tags               map[string]asgTag
}

type asgTag struct {
	value     string
	propagate bool
}

// maxASGTags is Auto Scaling's limit of tags per group.
const maxASGTags = 50

// newAutoScalingGroup is the group EKS makes for ng, with the tags EKS
// puts on it (eks:cluster-name, eks:nodegroup-name, and the
// cluster-autoscaler auto-discovery and cluster ownership tags).
func newAutoScalingGroup(s *state, ng *nodegroup) *autoScalingGroup {
	cluster, name := ng.doc.ClusterName, ng.doc.NodegroupName
	sc := ng.doc.ScalingConfig
	return &autoScalingGroup{
		name:         ng.asgName,
		nodegroupKey: nodegroupKey(cluster, name),
		min:          *sc.MinSize, max: *sc.MaxSize, desired: *sc.DesiredSize,
		createdAt: time.Now().UTC(),
		tags: map[string]asgTag{
			"eks:cluster-name":                     {cluster, true},
			"eks:nodegroup-name":                   {name, true},
			"k8s.io/cluster-autoscaler/enabled":    {"true", true},
			"k8s.io/cluster-autoscaler/" + cluster: {"owned", true},
			"kubernetes.io/cluster/" + cluster:     {"owned", true},
		},
	}
}

// serveAutoScaling answers the Auto Scaling query actions the emulator
// implements.
func (e *Emulator) serveAutoScaling(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeError(w, serviceAutoScaling, newError(http.StatusBadRequest, "MalformedQueryString", "%v", err))
		return
	}
	form := r.Form
	action := form.Get("Action")
	var (
		result any
		err    *apiError
	)
	switch action {
	case "DescribeAutoScalingGroups":
		result, err = e.describeAutoScalingGroups(form)
	case "CreateOrUpdateTags":
		err = e.changeASGTags(form, false)
	case "DeleteTags":
		err = e.changeASGTags(form, true)
	case "DescribeTags":
		result, err = e.describeASGTags(form)
	default:
		writeError(w, serviceAutoScaling, newError(http.StatusBadRequest, "InvalidAction", "Could not find operation %s for version 2011-01-01", action))
		return
	}
	e.countCall(serviceAutoScaling, action)
	if err != nil {
		writeError(w, serviceAutoScaling, err)
		return
	}
	writeQueryResult(w, serviceAutoScaling, action, result)
}

func validationError(format string, args ...any) *apiError {
	return newError(http.StatusBadRequest, "ValidationError", format, args...)
}

type asgTagDoc struct {
	ResourceID        string `xml:"ResourceId"`
	ResourceType      string `xml:"ResourceType"`
	Key               string `xml:"Key"`
	Value             string `xml:"Value"`
	PropagateAtLaunch bool   `xml:"PropagateAtLaunch"`
}

type asgInstanceDoc struct {
	InstanceID           string `xml:"InstanceId"`
	InstanceType         string `xml:"InstanceType"`
	AvailabilityZone     string `xml:"AvailabilityZone"`
	LifecycleState       string `xml:"LifecycleState"`
	HealthStatus         string `xml:"HealthStatus"`
	ProtectedFromScaleIn bool   `xml:"ProtectedFromScaleIn"`
}

type asgDoc struct {
	AutoScalingGroupName             string           `xml:"AutoScalingGroupName"`
	AutoScalingGroupARN              string           `xml:"AutoScalingGroupARN"`
	MinSize                          int32            `xml:"MinSize"`
	MaxSize                          int32            `xml:"MaxSize"`
	DesiredCapacity                  int32            `xml:"DesiredCapacity"`
	DefaultCooldown                  int              `xml:"DefaultCooldown"`
	AvailabilityZones                []string         `xml:"AvailabilityZones>member"`
	HealthCheckType                  string           `xml:"HealthCheckType"`
	HealthCheckGracePeriod           int              `xml:"HealthCheckGracePeriod"`
	Instances                        []asgInstanceDoc `xml:"Instances>member"`
	CreatedTime                      string           `xml:"CreatedTime"`
	VPCZoneIdentifier                string           `xml:"VPCZoneIdentifier"`
	Tags                             []asgTagDoc      `xml:"Tags>member"`
	TerminationPolicies              []string         `xml:"TerminationPolicies>member"`
	NewInstancesProtectedFromScaleIn bool             `xml:"NewInstancesProtectedFromScaleIn"`
	CapacityRebalance                bool             `xml:"CapacityRebalance"`
}

type describeASGsResult struct {
	AutoScalingGroups []asgDoc `xml:"AutoScalingGroups>member"`
	NextToken         string   `xml:"NextToken,omitempty"`
}

func (e *Emulator) asgARN(name string) string {
	return "arn:aws:autoscaling:" + e.opts.Region + ":" + AccountID + ":autoScalingGroup:" + newUUIDFor(name) + ":autoScalingGroupName/" + name
}

// newUUIDFor is a UUID-shaped string derived from name, stable per name.
func newUUIDFor(name string) string {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	s := strconv.FormatUint(h, 16) + strconv.FormatUint(h>>7, 16) + "00000000000000000000000000000000"
	return s[0:8] + "-" + s[8:12] + "-4" + s[13:16] + "-8" + s[17:20] + "-" + s[20:32]
}

// tagDocs lists an ASG's tags sorted by key, as DescribeTags orders them.
func (a *autoScalingGroup) tagDocs() []asgTagDoc {
	var out []asgTagDoc
	for _, key := range slices.Sorted(maps.Keys(a.tags)) {
		t := a.tags[key]
		out = append(out, asgTagDoc{ResourceID: a.name, ResourceType: "auto-scaling-group", Key: key, Value: t.value, PropagateAtLaunch: t.propagate})
	}
	return out
}

// describeAutoScalingGroups: AutoScalingGroupNames.member.N, filters
// tag-key, tag-value, tag:<key>; MaxRecords (1..100) with NextToken.
func (e *Emulator) describeAutoScalingGroups(form url.Values) (any, *apiError) {
	maxRecords, err := maxResultsParam(form, "MaxRecords", 1, 100)
	if err != nil {
		return nil, validationError("MaxRecords must be between 1 and 100")
	}
	names := queryList(form, "AutoScalingGroupNames.member")
	filters := queryFilters(form, false)
	e.mu.Lock()
	defer e.mu.Unlock()
	var docs []asgDoc
	for _, name := range slices.Sorted(maps.Keys(e.st.asgs)) {
		a := e.st.asgs[name]
		if len(names) > 0 && !slices.Contains(names, name) {
			continue
		}
		if !asgMatches(a, filters) {
			continue
		}
		docs = append(docs, e.asgDocFor(a))
	}
	pageDocs, next, ok := page(docs, maxRecords, form.Get("NextToken"))
	if !ok {
		return nil, validationError("The NextToken value is invalid")
	}
	return describeASGsResult{AutoScalingGroups: pageDocs, NextToken: next}, nil
}

func asgMatches(a *autoScalingGroup, filters []queryFilter) bool {
	for _, f := range filters {
		switch {
		case f.name == "tag-key":
			if !slices.ContainsFunc(slices.Collect(maps.Keys(a.tags)), func(k string) bool { return matchesAny(f.values, k) }) {
				return false
			}
		case f.name == "tag-value":
			found := false
			for _, t := range a.tags {
				found = found || matchesAny(f.values, t.value)
			}
			if !found {
				return false
			}
		case len(f.name) > 4 && f.name[:4] == "tag:":
			t, ok := a.tags[f.name[4:]]
			if !ok || !matchesAny(f.values, t.value) {
				return false
			}
		}
	}
	return true
}

// asgDocFor renders a group with its instances (the node group's
// nodes). e.mu is held.
func (e *Emulator) asgDocFor(a *autoScalingGroup) asgDoc {
	doc := asgDoc{
		AutoScalingGroupName:   a.name,
		AutoScalingGroupARN:    e.asgARN(a.name),
		MinSize:                a.min,
		MaxSize:                a.max,
		DesiredCapacity:        a.desired,
		DefaultCooldown:        300,
		HealthCheckType:        "EC2",
		HealthCheckGracePeriod: 15,
		CreatedTime:            a.createdAt.Format("2006-01-02T15:04:05.000Z"),
		Tags:                   a.tagDocs(),
		TerminationPolicies:    []string{"AllocationStrategy", "OldestLaunchTemplate", "OldestInstance"},
		CapacityRebalance:      true,
	}
	if ng := e.st.nodegroups[a.nodegroupKey]; ng != nil {
		doc.AvailabilityZones = ng.subnetZones()
		var subnets string
		for i, s := range ng.doc.Subnets {
			if i > 0 {
				subnets += ","
			}
			subnets += s
		}
		doc.VPCZoneIdentifier = subnets
		for _, n := range ng.nodes {
			doc.Instances = append(doc.Instances, asgInstanceDoc{
				InstanceID: n.instanceID, InstanceType: n.instanceType, AvailabilityZone: n.zone,
				LifecycleState: "InService", HealthStatus: "Healthy",
			})
		}
	}
	return doc
}

// changeASGTags is CreateOrUpdateTags (remove false) or DeleteTags:
// Tags.member.N.{ResourceId,ResourceType,Key,Value,PropagateAtLaunch}.
func (e *Emulator) changeASGTags(form url.Values, remove bool) *apiError {
	type change struct {
		asg, key, value string
		propagate       bool
	}
	var changes []change
	for i := 1; ; i++ {
		base := "Tags.member." + strconv.Itoa(i) + "."
		if _, ok := form[base+"Key"]; !ok {
			if _, ok := form[base+"ResourceId"]; !ok {
				break
			}
		}
		c := change{asg: form.Get(base + "ResourceId"), key: form.Get(base + "Key"), value: form.Get(base + "Value"), propagate: form.Get(base+"PropagateAtLaunch") == "true"}
		if c.key == "" {
			return validationError("1 validation error detected: Value null at 'tags.%d.member.key' failed to satisfy constraint: Member must not be null", i)
		}
		if rt := form.Get(base + "ResourceType"); rt != "" && rt != "auto-scaling-group" {
			return validationError("Invalid resource type %q: the only resource type is auto-scaling-group", rt)
		}
		changes = append(changes, c)
	}
	if len(changes) == 0 {
		return validationError("1 validation error detected: Value null at 'tags' failed to satisfy constraint: Member must not be null")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range changes {
		if _, ok := e.st.asgs[c.asg]; !ok {
			return validationError("AutoScalingGroup name not found - %s", c.asg)
		}
	}
	if !remove {
		// All or nothing: no tag is written when one group would exceed
		// the quota.
		added := map[string]map[string]bool{}
		for _, c := range changes {
			if _, exists := e.st.asgs[c.asg].tags[c.key]; !exists {
				if added[c.asg] == nil {
					added[c.asg] = map[string]bool{}
				}
				added[c.asg][c.key] = true
			}
		}
		for asg, keys := range added {
			if len(e.st.asgs[asg].tags)+len(keys) > maxASGTags {
				return newError(http.StatusBadRequest, "LimitExceeded", "The quota of %d tags per Auto Scaling group is exceeded for %s.", maxASGTags, asg)
			}
		}
	}
	for _, c := range changes {
		a := e.st.asgs[c.asg]
		if remove {
			delete(a.tags, c.key)
		} else {
			a.tags[c.key] = asgTag{value: c.value, propagate: c.propagate}
		}
	}
	return nil
}

type describeTagsResult struct {
	Tags      []asgTagDoc `xml:"Tags>member"`
	NextToken string      `xml:"NextToken,omitempty"`
}

// describeASGTags: filters auto-scaling-group, key, value,
// propagate-at-launch (values ORed within a filter, filters ANDed);
// MaxRecords with NextToken.
func (e *Emulator) describeASGTags(form url.Values) (any, *apiError) {
	maxRecords, err := maxResultsParam(form, "MaxRecords", 1, 100)
	if err != nil {
		return nil, validationError("MaxRecords must be between 1 and 100")
	}
	filters := queryFilters(form, false)
	for _, f := range filters {
		switch f.name {
		case "auto-scaling-group", "key", "value", "propagate-at-launch":
		default:
			return nil, validationError("Filter type %s is not correct. Allowed Filter types are: auto-scaling-group key value propagate-at-launch", f.name)
		}
	}
	e.mu.Lock()
	var tags []asgTagDoc
	for _, name := range slices.Sorted(maps.Keys(e.st.asgs)) {
		tags = append(tags, e.st.asgs[name].tagDocs()...)
	}
	e.mu.Unlock()
	tags = slices.DeleteFunc(tags, func(t asgTagDoc) bool {
		for _, f := range filters {
			var v string
			switch f.name {
			case "auto-scaling-group":
				v = t.ResourceID
			case "key":
				v = t.Key
			case "value":
				v = t.Value
			case "propagate-at-launch":
				v = strconv.FormatBool(t.PropagateAtLaunch)
			}
			if !slices.Contains(f.values, v) {
				return true
			}
		}
		return false
	})
	pageTags, next, ok := page(tags, maxRecords, form.Get("NextToken"))
	if !ok {
		return nil, validationError("The NextToken value is invalid")
	}
	return describeTagsResult{Tags: pageTags, NextToken: next}, nil
}
