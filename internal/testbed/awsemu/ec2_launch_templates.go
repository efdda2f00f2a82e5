package awsemu

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// launchTemplate is one EC2 launch template and its versions (1, 2, ...).
type launchTemplate struct {
	id, name       string
	created        time.Time
	defaultVersion int
	versions       []*launchTemplateVersion // versions[i] is version i+1; a deleted version is nil
	tags           []ec2Tag
}

type launchTemplateVersion struct {
	number      int
	description string
	created     time.Time
	data        launchTemplateData
}

// launchTemplateData is the part of ResponseLaunchTemplateData the
// emulator keeps (and echoes, with EC2's XML member names); other members
// of a request are accepted and dropped.
type launchTemplateData struct {
	ImageID                          string               `xml:"imageId,omitempty"`
	InstanceType                     string               `xml:"instanceType,omitempty"`
	UserData                         string               `xml:"userData,omitempty"`
	BlockDeviceMappings              []ltBlockDevice      `xml:"blockDeviceMappingSet>item"`
	TagSpecifications                []ltTagSpecification `xml:"tagSpecificationSet>item"`
	InstanceMarketOptions            *ltMarketOptions     `xml:"instanceMarketOptions"`
	CapacityReservationSpecification *ltCapacitySpec      `xml:"capacityReservationSpecification"`
}

type ltBlockDevice struct {
	DeviceName  string `xml:"deviceName,omitempty"`
	VirtualName string `xml:"virtualName,omitempty"`
	NoDevice    string `xml:"noDevice,omitempty"`
	Ebs         *ltEbs `xml:"ebs"`
}

type ltEbs struct {
	Encrypted           *bool  `xml:"encrypted"`
	DeleteOnTermination *bool  `xml:"deleteOnTermination"`
	Iops                *int   `xml:"iops"`
	KmsKeyID            string `xml:"kmsKeyId,omitempty"`
	SnapshotID          string `xml:"snapshotId,omitempty"`
	VolumeSize          *int   `xml:"volumeSize"`
	VolumeType          string `xml:"volumeType,omitempty"`
	Throughput          *int   `xml:"throughput"`
}

type ltTagSpecification struct {
	ResourceType string   `xml:"resourceType"`
	Tags         []ec2Tag `xml:"tagSet>item"`
}

type ltMarketOptions struct {
	MarketType  string         `xml:"marketType,omitempty"`
	SpotOptions *ltSpotOptions `xml:"spotOptions"`
}

type ltSpotOptions struct {
	MaxPrice                     string `xml:"maxPrice,omitempty"`
	SpotInstanceType             string `xml:"spotInstanceType,omitempty"`
	InstanceInterruptionBehavior string `xml:"instanceInterruptionBehavior,omitempty"`
}

type ltCapacitySpec struct {
	CapacityReservationPreference string            `xml:"capacityReservationPreference,omitempty"`
	CapacityReservationTarget     *ltCapacityTarget `xml:"capacityReservationTarget"`
}

type ltCapacityTarget struct {
	CapacityReservationID               string `xml:"capacityReservationId,omitempty"`
	CapacityReservationResourceGroupArn string `xml:"capacityReservationResourceGroupArn,omitempty"`
}

// The enumerations of the members the emulator checks (EC2 API
// reference: CapacityReservationPreference, MarketType).
var (
	reservationPreferences = []string{"capacity-reservations-only", "open", "none"}
	marketTypes            = []string{"spot", "capacity-block", "interruptible-capacity-reservation"}
)

// parseLaunchTemplateData reads LaunchTemplateData.* of a request: the
// top-level members present, and their values.
func parseLaunchTemplateData(form url.Values) (launchTemplateData, map[string]bool, *apiError) {
	const p = "LaunchTemplateData."
	present := map[string]bool{}
	for k := range form {
		if rest, ok := strings.CutPrefix(k, p); ok {
			member, _, _ := strings.Cut(rest, ".")
			present[member] = true
		}
	}
	var d launchTemplateData
	d.ImageID = form.Get(p + "ImageId")
	d.InstanceType = form.Get(p + "InstanceType")
	d.UserData = form.Get(p + "UserData")
	for i := 1; ; i++ {
		b := p + "BlockDeviceMapping." + strconv.Itoa(i) + "."
		if !hasPrefix(form, b) {
			break
		}
		m := ltBlockDevice{DeviceName: form.Get(b + "DeviceName"), VirtualName: form.Get(b + "VirtualName"), NoDevice: form.Get(b + "NoDevice")}
		if hasPrefix(form, b+"Ebs.") {
			e := b + "Ebs."
			m.Ebs = &ltEbs{
				Encrypted: optBool(form, e+"Encrypted"), DeleteOnTermination: optBool(form, e+"DeleteOnTermination"),
				Iops: optInt(form, e+"Iops"), KmsKeyID: form.Get(e + "KmsKeyId"), SnapshotID: form.Get(e + "SnapshotId"),
				VolumeSize: optInt(form, e+"VolumeSize"), VolumeType: form.Get(e + "VolumeType"), Throughput: optInt(form, e+"Throughput"),
			}
		}
		d.BlockDeviceMappings = append(d.BlockDeviceMappings, m)
	}
	for i := 1; ; i++ {
		b := p + "TagSpecification." + strconv.Itoa(i) + "."
		if !hasPrefix(form, b) {
			break
		}
		d.TagSpecifications = append(d.TagSpecifications, ltTagSpecification{ResourceType: form.Get(b + "ResourceType"), Tags: queryTags(form, b+"Tag")})
	}
	if present["InstanceMarketOptions"] {
		o := &ltMarketOptions{MarketType: form.Get(p + "InstanceMarketOptions.MarketType")}
		if o.MarketType != "" && !slices.Contains(marketTypes, o.MarketType) {
			return d, nil, invalidEnum("InstanceMarketOptions.MarketType", o.MarketType, marketTypes)
		}
		if s := p + "InstanceMarketOptions.SpotOptions."; hasPrefix(form, s) {
			o.SpotOptions = &ltSpotOptions{MaxPrice: form.Get(s + "MaxPrice"), SpotInstanceType: form.Get(s + "SpotInstanceType"),
				InstanceInterruptionBehavior: form.Get(s + "InstanceInterruptionBehavior")}
		}
		d.InstanceMarketOptions = o
	}
	if present["CapacityReservationSpecification"] {
		c := p + "CapacityReservationSpecification."
		spec := &ltCapacitySpec{CapacityReservationPreference: form.Get(c + "CapacityReservationPreference")}
		if v := spec.CapacityReservationPreference; v != "" && !slices.Contains(reservationPreferences, v) {
			return d, nil, invalidEnum("CapacityReservationSpecification.CapacityReservationPreference", v, reservationPreferences)
		}
		if hasPrefix(form, c+"CapacityReservationTarget.") {
			t := &ltCapacityTarget{
				CapacityReservationID:               form.Get(c + "CapacityReservationTarget.CapacityReservationId"),
				CapacityReservationResourceGroupArn: form.Get(c + "CapacityReservationTarget.CapacityReservationResourceGroupArn"),
			}
			if t.CapacityReservationID != "" && t.CapacityReservationResourceGroupArn != "" {
				return d, nil, newError(http.StatusBadRequest, "InvalidParameterCombination",
					"The parameter CapacityReservationId cannot be used with the parameter CapacityReservationResourceGroupArn.")
			}
			if id := t.CapacityReservationID; id != "" && reservationIDMalformed(id) {
				return d, nil, errReservationMalformed(id)
			}
			spec.CapacityReservationTarget = t
		}
		d.CapacityReservationSpecification = spec
	}
	return d, present, nil
}

func hasPrefix(form url.Values, prefix string) bool {
	for k := range form {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func optBool(form url.Values, name string) *bool {
	if v, err := strconv.ParseBool(form.Get(name)); err == nil {
		return &v
	}
	return nil
}

func optInt(form url.Values, name string) *int {
	if v, err := strconv.Atoi(form.Get(name)); err == nil {
		return &v
	}
	return nil
}

// queryTags reads prefix.N.Key / prefix.N.Value.
func queryTags(form url.Values, prefix string) []ec2Tag {
	var tags []ec2Tag
	for i := 1; ; i++ {
		b := prefix + "." + strconv.Itoa(i) + "."
		key, ok := form[b+"Key"]
		if !ok {
			return tags
		}
		tags = append(tags, ec2Tag{Key: key[0], Value: form.Get(b + "Value")})
	}
}

func invalidEnum(name, value string, valid []string) *apiError {
	return newError(http.StatusBadRequest, "InvalidParameterValue", "Value (%s) for parameter %s is invalid. Valid values are: %s.", value, name, strings.Join(valid, ", "))
}

// merge is data with the members over sets: what CreateLaunchTemplateVersion
// makes of a SourceVersion ("If you specify additional launch parameters
// for the new version, they overwrite any corresponding launch parameters
// inherited from the source version": API reference, SourceVersion).
func (d launchTemplateData) merge(over launchTemplateData, present map[string]bool) launchTemplateData {
	out := d
	if present["ImageId"] {
		out.ImageID = over.ImageID
	}
	if present["InstanceType"] {
		out.InstanceType = over.InstanceType
	}
	if present["UserData"] {
		out.UserData = over.UserData
	}
	if present["BlockDeviceMapping"] {
		out.BlockDeviceMappings = over.BlockDeviceMappings
	}
	if present["TagSpecification"] {
		out.TagSpecifications = over.TagSpecifications
	}
	if present["InstanceMarketOptions"] {
		out.InstanceMarketOptions = over.InstanceMarketOptions
	}
	if present["CapacityReservationSpecification"] {
		out.CapacityReservationSpecification = over.CapacityReservationSpecification
	}
	return out
}

// The launch template errors of the EC2 API reference's error code list;
// the messages are the emulator's.
func errLaunchTemplateIDNotFound(id string) *apiError {
	return newError(http.StatusBadRequest, "InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
}

func errLaunchTemplateNameNotFound(name string) *apiError {
	return newError(http.StatusBadRequest, "InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name)
}

func errLaunchTemplateIDMalformed(id string) *apiError {
	return newError(http.StatusBadRequest, "InvalidLaunchTemplateId.Malformed", "The specified ID for the launch template (%s) is malformed. Ensure that you specify the launch template ID in the form lt-xxxxxxxxxxxxxxxxx.", id)
}

func errLaunchTemplateVersionNotFound(version string, lt *launchTemplate) *apiError {
	return newError(http.StatusBadRequest, "InvalidLaunchTemplateId.VersionNotFound", "Could not find launch template version %s for launch template %s.", version, lt.id)
}

// launchTemplateNamePattern and its length bounds: the API reference's
// LaunchTemplateName (3 to 128 of [a-zA-Z0-9().-/_]).
var launchTemplateNamePattern = regexp.MustCompile(`^[a-zA-Z0-9().\-/_]{3,128}$`)

// findLaunchTemplate resolves LaunchTemplateId or LaunchTemplateName (one
// of them). e.mu is held.
func (s *state) findLaunchTemplate(id, name string) (*launchTemplate, *apiError) {
	switch {
	case id != "" && name != "":
		return nil, newError(http.StatusBadRequest, "InvalidParameterCombination", "Specify either the launch template ID or the launch template name, but not both.")
	case id != "":
		if !wellFormedID(id, "lt-") {
			return nil, errLaunchTemplateIDMalformed(id)
		}
		for _, lt := range s.launchTemplates {
			if lt.id == id {
				return lt, nil
			}
		}
		return nil, errLaunchTemplateIDNotFound(id)
	case name != "":
		for _, lt := range s.launchTemplates {
			if lt.name == name {
				return lt, nil
			}
		}
		return nil, errLaunchTemplateNameNotFound(name)
	default:
		return nil, newError(http.StatusBadRequest, "MissingParameter", "The request must contain the parameter LaunchTemplateName or LaunchTemplateId")
	}
}

// version resolves "$Latest", "$Default" or a number; "" is $Default.
func (lt *launchTemplate) version(v string) (*launchTemplateVersion, *apiError) {
	n := 0
	switch v {
	case "$Latest":
		n = lt.latest()
	case "$Default", "":
		n = lt.defaultVersion
	default:
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			return nil, errLaunchTemplateVersionNotFound(v, lt)
		}
	}
	if n < 1 || n > len(lt.versions) || lt.versions[n-1] == nil {
		return nil, errLaunchTemplateVersionNotFound(v, lt)
	}
	return lt.versions[n-1], nil
}

func (lt *launchTemplate) latest() int { return len(lt.versions) }

type launchTemplateDoc struct {
	LaunchTemplateID     string   `xml:"launchTemplateId"`
	LaunchTemplateName   string   `xml:"launchTemplateName"`
	CreateTime           string   `xml:"createTime"`
	CreatedBy            string   `xml:"createdBy"`
	DefaultVersionNumber int      `xml:"defaultVersionNumber"`
	LatestVersionNumber  int      `xml:"latestVersionNumber"`
	TagSet               []ec2Tag `xml:"tagSet>item"`
}

func (lt *launchTemplate) doc() launchTemplateDoc {
	return launchTemplateDoc{
		LaunchTemplateID: lt.id, LaunchTemplateName: lt.name, CreateTime: ec2Time(lt.created), CreatedBy: CallerARN,
		DefaultVersionNumber: lt.defaultVersion, LatestVersionNumber: lt.latest(), TagSet: lt.tags,
	}
}

type launchTemplateVersionDoc struct {
	LaunchTemplateID   string             `xml:"launchTemplateId"`
	LaunchTemplateName string             `xml:"launchTemplateName"`
	VersionNumber      int                `xml:"versionNumber"`
	VersionDescription string             `xml:"versionDescription,omitempty"`
	CreateTime         string             `xml:"createTime"`
	CreatedBy          string             `xml:"createdBy"`
	DefaultVersion     bool               `xml:"defaultVersion"`
	LaunchTemplateData launchTemplateData `xml:"launchTemplateData"`
}

func (lt *launchTemplate) versionDoc(v *launchTemplateVersion) launchTemplateVersionDoc {
	return launchTemplateVersionDoc{
		LaunchTemplateID: lt.id, LaunchTemplateName: lt.name, VersionNumber: v.number, VersionDescription: v.description,
		CreateTime: ec2Time(v.created), CreatedBy: CallerARN, DefaultVersion: v.number == lt.defaultVersion, LaunchTemplateData: v.data,
	}
}

type createLaunchTemplateResult struct {
	RequestID      string            `xml:"requestId"`
	LaunchTemplate launchTemplateDoc `xml:"launchTemplate"`
}

// createLaunchTemplate: LaunchTemplateName (unique, the API reference's
// pattern) and LaunchTemplateData (required), VersionDescription,
// TagSpecification.N (resource type launch-template).
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateLaunchTemplate.html
func (e *Emulator) createLaunchTemplate(form url.Values) (any, *apiError) {
	name := form.Get("LaunchTemplateName")
	if name == "" {
		return nil, errMissingParameter("LaunchTemplateName")
	}
	if !launchTemplateNamePattern.MatchString(name) {
		return nil, newError(http.StatusBadRequest, "InvalidLaunchTemplateName.MalformedException",
			"A launch template name must be between 3 and 128 characters, and may contain letters, numbers, and the following characters: - ( ) . / _.")
	}
	data, present, err := parseLaunchTemplateData(form)
	if err != nil {
		return nil, err
	}
	if len(present) == 0 {
		return nil, errMissingParameter("LaunchTemplateData")
	}
	var tags []ec2Tag
	for i := 1; ; i++ {
		b := "TagSpecification." + strconv.Itoa(i) + "."
		if !hasPrefix(form, b) {
			break
		}
		if form.Get(b+"ResourceType") == "launch-template" {
			tags = append(tags, queryTags(form, b+"Tag")...)
		}
	}
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, lt := range e.st.launchTemplates {
		if lt.name == name {
			return nil, newError(http.StatusBadRequest, "InvalidLaunchTemplateName.AlreadyExistsException",
				"Launch template name already in use.")
		}
	}
	e.st.launchTemplateSeq++
	lt := &launchTemplate{
		id: resourceID("lt", e.st.region, e.st.launchTemplateSeq, now.UnixNano()), name: name, created: now.UTC(),
		defaultVersion: 1, tags: tags,
	}
	lt.versions = []*launchTemplateVersion{{number: 1, description: form.Get("VersionDescription"), created: now.UTC(), data: data}}
	e.st.launchTemplates = append(e.st.launchTemplates, lt)
	return createLaunchTemplateResult{RequestID: nextRequestID(), LaunchTemplate: lt.doc()}, nil
}

type createLaunchTemplateVersionResult struct {
	RequestID string                   `xml:"requestId"`
	Version   launchTemplateVersionDoc `xml:"launchTemplateVersion"`
}

// createLaunchTemplateVersion: the template by LaunchTemplateId or
// LaunchTemplateName; SourceVersion (a number, $Latest or $Default) whose
// data the new version starts from, overwritten member by member.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateLaunchTemplateVersion.html
func (e *Emulator) createLaunchTemplateVersion(form url.Values) (any, *apiError) {
	data, present, err := parseLaunchTemplateData(form)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	lt, err := e.st.findLaunchTemplate(form.Get("LaunchTemplateId"), form.Get("LaunchTemplateName"))
	if err != nil {
		return nil, err
	}
	if source := form.Get("SourceVersion"); source != "" {
		v, err := lt.version(source)
		if err != nil {
			return nil, err
		}
		data = v.data.merge(data, present)
	}
	v := &launchTemplateVersion{number: lt.latest() + 1, description: form.Get("VersionDescription"), created: now.UTC(), data: data}
	lt.versions = append(lt.versions, v)
	return createLaunchTemplateVersionResult{RequestID: nextRequestID(), Version: lt.versionDoc(v)}, nil
}

type describeLaunchTemplatesResult struct {
	RequestID       string              `xml:"requestId"`
	LaunchTemplates []launchTemplateDoc `xml:"launchTemplates>item"`
	NextToken       string              `xml:"nextToken,omitempty"`
}

// describeLaunchTemplates: LaunchTemplateId.N or LaunchTemplateName.N
// (each must exist), filters create-time, launch-template-name, tag:<key>,
// tag-key; MaxResults 1..200.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeLaunchTemplates.html
func (e *Emulator) describeLaunchTemplates(form url.Values) (any, *apiError) {
	maxResults, err := maxResultsParam(form, "MaxResults", 1, 200)
	if err != nil {
		return nil, err
	}
	ids, names := queryList(form, "LaunchTemplateId"), queryList(form, "LaunchTemplateName")
	e.mu.Lock()
	var docs []launchTemplateDoc
	for _, id := range ids {
		lt, err := e.st.findLaunchTemplate(id, "")
		if err != nil {
			e.mu.Unlock()
			return nil, err
		}
		docs = append(docs, lt.doc())
	}
	for _, name := range names {
		lt, err := e.st.findLaunchTemplate("", name)
		if err != nil {
			e.mu.Unlock()
			return nil, newError(http.StatusBadRequest, "InvalidLaunchTemplateName.NotFoundException",
				"At least one of the launch templates specified in the request does not exist.")
		}
		docs = append(docs, lt.doc())
	}
	if len(ids) == 0 && len(names) == 0 {
		for _, lt := range e.st.launchTemplates {
			docs = append(docs, lt.doc())
		}
	}
	e.mu.Unlock()
	for _, f := range queryFilters(form, true) {
		var keep func(launchTemplateDoc) bool
		switch {
		case f.name == "create-time":
			keep = func(d launchTemplateDoc) bool { return matchesAny(f.values, d.CreateTime) }
		case f.name == "launch-template-name":
			keep = func(d launchTemplateDoc) bool { return matchesAny(f.values, d.LaunchTemplateName) }
		case f.name == "tag-key":
			keep = func(d launchTemplateDoc) bool {
				return slices.ContainsFunc(d.TagSet, func(t ec2Tag) bool { return matchesAny(f.values, t.Key) })
			}
		case strings.HasPrefix(f.name, "tag:"):
			key := strings.TrimPrefix(f.name, "tag:")
			keep = func(d launchTemplateDoc) bool {
				return slices.ContainsFunc(d.TagSet, func(t ec2Tag) bool { return t.Key == key && matchesAny(f.values, t.Value) })
			}
		default:
			return nil, errInvalidFilter(f.name)
		}
		docs = slices.DeleteFunc(docs, func(d launchTemplateDoc) bool { return !keep(d) })
	}
	pageDocs, next, ok := page(docs, maxResults, form.Get("NextToken"))
	if !ok {
		return nil, errInvalidToken(form.Get("NextToken"))
	}
	return describeLaunchTemplatesResult{RequestID: nextRequestID(), LaunchTemplates: pageDocs, NextToken: next}, nil
}

type describeLaunchTemplateVersionsResult struct {
	RequestID string                     `xml:"requestId"`
	Versions  []launchTemplateVersionDoc `xml:"launchTemplateVersionSet>item"`
	NextToken string                     `xml:"nextToken,omitempty"`
}

// describeLaunchTemplateVersions: one template (LaunchTemplateId or
// LaunchTemplateName) and LaunchTemplateVersion.N ($Latest, $Default,
// numbers), or MinVersion/MaxVersion; or, with neither ID nor name, every
// template's $Latest and/or $Default (numbers refused, as the API
// reference says); filters image-id, instance-type, is-default-version,
// create-time; MaxResults 1..200.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeLaunchTemplateVersions.html
func (e *Emulator) describeLaunchTemplateVersions(form url.Values) (any, *apiError) {
	maxResults, err := maxResultsParam(form, "MaxResults", 1, 200)
	if err != nil {
		return nil, err
	}
	versions := queryList(form, "LaunchTemplateVersion")
	id, name := form.Get("LaunchTemplateId"), form.Get("LaunchTemplateName")
	e.mu.Lock()
	var docs []launchTemplateVersionDoc
	if id == "" && name == "" {
		for _, v := range versions {
			if v != "$Latest" && v != "$Default" {
				e.mu.Unlock()
				return nil, newError(http.StatusBadRequest, "InvalidParameterValue",
					"To describe all launch templates, specify $Latest, $Default, or both as the version; version numbers need a launch template ID or name.")
			}
		}
		for _, lt := range e.st.launchTemplates {
			for _, n := range []int{lt.defaultVersion, lt.latest()} {
				want := (n == lt.defaultVersion && slices.Contains(versions, "$Default")) || (n == lt.latest() && slices.Contains(versions, "$Latest")) || len(versions) == 0
				if want && !slices.ContainsFunc(docs, func(d launchTemplateVersionDoc) bool { return d.LaunchTemplateID == lt.id && d.VersionNumber == n }) {
					docs = append(docs, lt.versionDoc(lt.versions[n-1]))
				}
			}
		}
	} else {
		lt, err := e.st.findLaunchTemplate(id, name)
		if err != nil {
			e.mu.Unlock()
			return nil, err
		}
		if len(versions) > 0 {
			for _, want := range versions {
				v, err := lt.version(want)
				if err != nil {
					e.mu.Unlock()
					return nil, err
				}
				if !slices.ContainsFunc(docs, func(d launchTemplateVersionDoc) bool { return d.VersionNumber == v.number }) {
					docs = append(docs, lt.versionDoc(v))
				}
			}
		} else {
			lo, _ := strconv.Atoi(form.Get("MinVersion"))
			hi, err := strconv.Atoi(form.Get("MaxVersion"))
			if err != nil {
				hi = lt.latest()
			}
			for _, v := range lt.versions {
				if v != nil && v.number >= lo && v.number <= hi {
					docs = append(docs, lt.versionDoc(v))
				}
			}
		}
	}
	e.mu.Unlock()
	for _, f := range queryFilters(form, true) {
		var field func(launchTemplateVersionDoc) string
		switch f.name {
		case "image-id":
			field = func(d launchTemplateVersionDoc) string { return d.LaunchTemplateData.ImageID }
		case "instance-type":
			field = func(d launchTemplateVersionDoc) string { return d.LaunchTemplateData.InstanceType }
		case "is-default-version":
			field = func(d launchTemplateVersionDoc) string { return strconv.FormatBool(d.DefaultVersion) }
		case "create-time":
			field = func(d launchTemplateVersionDoc) string { return d.CreateTime }
		default:
			return nil, errInvalidFilter(f.name)
		}
		docs = slices.DeleteFunc(docs, func(d launchTemplateVersionDoc) bool { return !matchesAny(f.values, field(d)) })
	}
	pageDocs, next, ok := page(docs, maxResults, form.Get("NextToken"))
	if !ok {
		return nil, errInvalidToken(form.Get("NextToken"))
	}
	return describeLaunchTemplateVersionsResult{RequestID: nextRequestID(), Versions: pageDocs, NextToken: next}, nil
}

type deleteLaunchTemplateResult struct {
	RequestID      string            `xml:"requestId"`
	LaunchTemplate launchTemplateDoc `xml:"launchTemplate"`
}

// deleteLaunchTemplate deletes a template and all its versions.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteLaunchTemplate.html
func (e *Emulator) deleteLaunchTemplate(form url.Values) (any, *apiError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	lt, err := e.st.findLaunchTemplate(form.Get("LaunchTemplateId"), form.Get("LaunchTemplateName"))
	if err != nil {
		return nil, err
	}
	e.st.launchTemplates = slices.DeleteFunc(e.st.launchTemplates, func(have *launchTemplate) bool { return have == lt })
	return deleteLaunchTemplateResult{RequestID: nextRequestID(), LaunchTemplate: lt.doc()}, nil
}
