package awsemu

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// serveEKS routes the EKS REST-JSON operations the emulator implements
// (paths from the EKS API reference's request syntax).
func (e *Emulator) serveEKS(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
	for i, p := range parts {
		if unescaped, err := url.PathUnescape(p); err == nil {
			parts[i] = unescaped
		}
	}
	route := func(method string, n int) bool { return r.Method == method && len(parts) == n }
	var (
		op     string
		result any
		err    *apiError
	)
	switch {
	case route(http.MethodGet, 1) && parts[0] == "clusters":
		op, result, err = "ListClusters", e.listClusters(), nil
	case route(http.MethodGet, 2) && parts[0] == "clusters":
		op = "DescribeCluster"
		result, err = e.describeCluster(parts[1])
	case route(http.MethodPost, 3) && parts[0] == "clusters" && parts[2] == "node-groups":
		op = "CreateNodegroup"
		var req createNodegroupRequest
		if err = decodeJSON(r, &req); err == nil {
			var doc nodegroupDoc
			if doc, err = e.createNodegroup(parts[1], &req); err == nil {
				result = map[string]any{"nodegroup": doc}
			}
		}
	case route(http.MethodGet, 3) && parts[0] == "clusters" && parts[2] == "node-groups":
		op = "ListNodegroups"
		result, err = e.listNodegroups(parts[1], r.URL.Query())
	case route(http.MethodGet, 4) && parts[0] == "clusters" && parts[2] == "node-groups":
		op = "DescribeNodegroup"
		var doc nodegroupDoc
		if doc, err = e.describeNodegroup(parts[1], parts[3]); err == nil {
			result = map[string]any{"nodegroup": doc}
		}
	case route(http.MethodDelete, 4) && parts[0] == "clusters" && parts[2] == "node-groups":
		op = "DeleteNodegroup"
		var doc nodegroupDoc
		if doc, err = e.deleteNodegroup(parts[1], parts[3]); err == nil {
			result = map[string]any{"nodegroup": doc}
		}
	case route(http.MethodPost, 5) && parts[0] == "clusters" && parts[2] == "node-groups" && parts[4] == "update-config":
		op = "UpdateNodegroupConfig"
		var req updateNodegroupConfigRequest
		if err = decodeJSON(r, &req); err == nil {
			result, err = e.updateNodegroupConfig(parts[1], parts[3], &req)
		}
	case route(http.MethodPost, 5) && parts[0] == "clusters" && parts[2] == "node-groups" && parts[4] == "update-version":
		op = "UpdateNodegroupVersion"
		var req updateNodegroupVersionRequest
		if err = decodeJSON(r, &req); err == nil {
			result, err = e.updateNodegroupVersion(parts[1], parts[3], &req)
		}
	case route(http.MethodGet, 4) && parts[0] == "clusters" && parts[2] == "updates":
		op = "DescribeUpdate"
		result, err = e.describeUpdate(parts[1], parts[3], r.URL.Query().Get("nodegroupName"))
	case route(http.MethodPost, 2) && parts[0] == "tags":
		op = "TagResource"
		var req struct {
			Tags map[string]string `json:"tags"`
		}
		if err = decodeJSON(r, &req); err == nil {
			result, err = e.tagResource(parts[1], req.Tags, nil)
		}
	case route(http.MethodDelete, 2) && parts[0] == "tags":
		op = "UntagResource"
		result, err = e.tagResource(parts[1], nil, r.URL.Query()["tagKeys"])
	case route(http.MethodGet, 2) && parts[0] == "tags":
		op = "ListTagsForResource"
		result, err = e.listTags(parts[1])
	default:
		writeError(w, serviceEKS, newError(http.StatusNotFound, "UnknownOperationException", "%s %s is not an operation this emulator implements", r.Method, r.URL.Path))
		return
	}
	e.countCall(serviceEKS, op)
	if err != nil {
		writeError(w, serviceEKS, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-RequestId", nextRequestID())
	_ = json.NewEncoder(w).Encode(result)
}

func decodeJSON(r *http.Request, v any) *apiError {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return newError(http.StatusBadRequest, "BadRequestException", "Could not parse the request body: %v", err)
	}
	return nil
}

func (e *Emulator) listClusters() any {
	return map[string]any{"clusters": []string{e.opts.ClusterName}}
}

func (e *Emulator) clusterARN() string {
	return "arn:aws:eks:" + e.opts.Region + ":" + AccountID + ":cluster/" + e.opts.ClusterName
}

// describeCluster reports the testbed's Kubernetes as the cluster: its
// API server is the endpoint, the testbed CA its certificate authority.
func (e *Emulator) describeCluster(name string) (any, *apiError) {
	if name != e.opts.ClusterName {
		return nil, errClusterNotFound(name)
	}
	e.mu.Lock()
	caPEM, created := e.st.caPEM, e.st.clusterCreatedAt
	e.mu.Unlock()
	endpoint, status := "", "CREATING"
	if e.kube != nil && e.kubeReady() {
		endpoint, status = e.kube.endpoint(), "ACTIVE"
	}
	subnets := make([]string, len(testSubnets))
	for i, s := range testSubnets {
		subnets[i] = s.id
	}
	return map[string]any{"cluster": map[string]any{
		"name":                 e.opts.ClusterName,
		"arn":                  e.clusterARN(),
		"createdAt":            epochSeconds(created),
		"version":              ClusterVersion(),
		"endpoint":             endpoint,
		"roleArn":              "arn:aws:iam::" + AccountID + ":role/gpu-testbed-cluster",
		"status":               status,
		"platformVersion":      "eks.20",
		"certificateAuthority": map[string]string{"data": base64.StdEncoding.EncodeToString(caPEM)},
		"resourcesVpcConfig": map[string]any{
			"subnetIds":              subnets,
			"securityGroupIds":       []string{},
			"clusterSecurityGroupId": "sg-0a1b2c3d4e5f60000",
			"vpcId":                  testVPC,
			"endpointPublicAccess":   true,
			"endpointPrivateAccess":  true,
			"publicAccessCidrs":      []string{"0.0.0.0/0"},
		},
		"kubernetesNetworkConfig": map[string]any{"serviceIpv4Cidr": "10.96.0.0/12", "ipFamily": "ipv4"},
		"accessConfig":            map[string]any{"authenticationMode": "API_AND_CONFIG_MAP"},
		"tags":                    map[string]string{},
	}}, nil
}

// kubeReady reports whether the testbed cluster has started (its API
// server URL is known).
func (e *Emulator) kubeReady() bool { return e.kube.endpoint() != "" }

// maxListResults is ListNodegroups's maxResults bound (1..100).
const maxListResults = 100

func (e *Emulator) listNodegroups(cluster string, q url.Values) (any, *apiError) {
	if cluster != e.opts.ClusterName {
		return nil, errClusterNotFound(cluster)
	}
	limit := maxListResults
	if v := q.Get("maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListResults {
			return nil, invalidParameter("maxResults must be between 1 and 100, not %s.", v)
		}
		limit = n
	}
	e.mu.Lock()
	names := []string{}
	for _, ng := range e.st.nodegroups {
		if ng.doc.ClusterName == cluster {
			names = append(names, ng.doc.NodegroupName)
		}
	}
	e.mu.Unlock()
	slices.Sort(names)
	start := 0
	if token := q.Get("nextToken"); token != "" {
		start = slices.IndexFunc(names, func(n string) bool { return n > token })
		if start < 0 {
			start = len(names)
		}
	}
	page := names[start:min(len(names), start+limit)]
	out := map[string]any{"nodegroups": page}
	if start+limit < len(names) {
		out["nextToken"] = page[len(page)-1]
	}
	return out, nil
}

func (e *Emulator) describeNodegroup(cluster, name string) (nodegroupDoc, *apiError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cluster != e.st.clusterName {
		return nodegroupDoc{}, errClusterNotFound(cluster)
	}
	ng, ok := e.st.nodegroups[nodegroupKey(cluster, name)]
	if !ok {
		return nodegroupDoc{}, errNodegroupNotFound(cluster, name)
	}
	return ng.view(), nil
}

func (e *Emulator) updateNodegroupConfig(cluster, name string, req *updateNodegroupConfigRequest) (any, *apiError) {
	var params []updateParam
	add := func(kind, value string) { params = append(params, updateParam{Type: kind, Value: value}) }
	if sc := req.ScalingConfig; sc != nil {
		if sc.MinSize != nil {
			add("MinSize", strconv.Itoa(int(*sc.MinSize)))
		}
		if sc.MaxSize != nil {
			add("MaxSize", strconv.Itoa(int(*sc.MaxSize)))
		}
		if sc.DesiredSize != nil {
			add("DesiredSize", strconv.Itoa(int(*sc.DesiredSize)))
		}
	}
	if l := req.Labels; l != nil {
		if len(l.AddOrUpdateLabels) > 0 {
			add("LabelsToAdd", mustJSON(l.AddOrUpdateLabels))
		}
		if len(l.RemoveLabels) > 0 {
			add("LabelsToRemove", mustJSON(l.RemoveLabels))
		}
	}
	if t := req.Taints; t != nil {
		if len(t.AddOrUpdateTaints) > 0 {
			add("TaintsToAdd", mustJSON(t.AddOrUpdateTaints))
		}
		if len(t.RemoveTaints) > 0 {
			add("TaintsToRemove", mustJSON(t.RemoveTaints))
		}
	}
	if u := req.UpdateConfig; u != nil {
		if u.MaxUnavailable != nil {
			add("MaxUnavailable", strconv.Itoa(int(*u.MaxUnavailable)))
		}
		if u.MaxUnavailablePercentage != nil {
			add("MaxUnavailablePercentage", strconv.Itoa(int(*u.MaxUnavailablePercentage)))
		}
		if u.UpdateStrategy != "" {
			add("UpdateStrategy", u.UpdateStrategy)
		}
	}
	if r := req.NodeRepairConfig; r != nil {
		if r.Enabled != nil {
			add("NodeRepairEnabled", strconv.FormatBool(*r.Enabled))
		}
		add("NodeRepairConfig", mustJSON(r))
	}
	if len(params) == 0 {
		return nil, invalidParameter("No changes needed: the request changes none of labels, taints, scalingConfig, updateConfig and nodeRepairConfig.")
	}
	u, err := e.startUpdate(cluster, name, pendingUpdate{config: req, token: req.ClientRequestToken}, updateConfig, params)
	if err != nil {
		return nil, err
	}
	return map[string]any{"update": u}, nil
}

func (e *Emulator) updateNodegroupVersion(cluster, name string, req *updateNodegroupVersionRequest) (any, *apiError) {
	if req.Version != "" && req.Version != ClusterVersion() {
		return nil, invalidParameter("Requested Nodegroup version %s is invalid: a node group's version must match its cluster's (%s).", req.Version, ClusterVersion())
	}
	if req.LaunchTemplate != nil {
		if err := validateLaunchTemplate(req.LaunchTemplate); err != nil {
			return nil, err
		}
	}
	version := req.Version
	if version == "" {
		version = ClusterVersion()
	}
	params := []updateParam{{Type: "Version", Value: version}}
	if req.ReleaseVersion != "" {
		params = append(params, updateParam{Type: "ReleaseVersion", Value: req.ReleaseVersion})
	}
	if lt := req.LaunchTemplate; lt != nil {
		if lt.Name != "" {
			params = append(params, updateParam{Type: "LaunchTemplateName", Value: lt.Name})
		}
		if lt.ID != "" {
			params = append(params, updateParam{Type: "LaunchTemplateId", Value: lt.ID})
		}
		if lt.Version != "" {
			params = append(params, updateParam{Type: "LaunchTemplateVersion", Value: lt.Version})
		}
	}
	if req.Force {
		params = append(params, updateParam{Type: "Force", Value: "true"})
	}
	u, err := e.startUpdate(cluster, name, pendingUpdate{vers: req, token: req.ClientRequestToken}, updateVersion, params)
	if err != nil {
		return nil, err
	}
	return map[string]any{"update": u}, nil
}

func (e *Emulator) describeUpdate(cluster, id, nodegroupName string) (any, *apiError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cluster != e.st.clusterName {
		return nil, errClusterNotFound(cluster)
	}
	notFound := newError(http.StatusNotFound, "ResourceNotFoundException", "No update found for ID: %s", id)
	if nodegroupName == "" {
		return nil, notFound
	}
	ng, ok := e.st.nodegroups[nodegroupKey(cluster, nodegroupName)]
	if !ok {
		return nil, errNodegroupNotFound(cluster, nodegroupName)
	}
	u, ok := ng.updates[id]
	if !ok {
		return nil, notFound
	}
	return map[string]any{"update": *u}, nil
}

// tagResource adds tags and removes keys on a node group or the cluster.
func (e *Emulator) tagResource(arn string, add map[string]string, remove []string) (any, *apiError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	tags, err := e.tagsOf(arn)
	if err != nil {
		return nil, err
	}
	for k, v := range add {
		tags[k] = v
	}
	for _, k := range remove {
		delete(tags, k)
	}
	return map[string]any{}, nil
}

func (e *Emulator) listTags(arn string) (any, *apiError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	tags, err := e.tagsOf(arn)
	if err != nil {
		return nil, err
	}
	return map[string]any{"tags": tags}, nil
}

// tagsOf is the live tag map of the resource arn names. e.mu is held.
func (e *Emulator) tagsOf(arn string) (map[string]string, *apiError) {
	if arn == e.clusterARN() {
		if e.st.clusterTags == nil {
			e.st.clusterTags = map[string]string{}
		}
		return e.st.clusterTags, nil
	}
	for _, ng := range e.st.nodegroups {
		if ng.doc.NodegroupArn == arn {
			return ng.doc.Tags, nil
		}
	}
	return nil, newError(http.StatusNotFound, "NotFoundException", "Resource %s not found.", arn)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
