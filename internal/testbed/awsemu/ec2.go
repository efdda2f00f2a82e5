package awsemu

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/ec2catalog"
)

// serveEC2 answers the EC2 query actions the emulator implements.
func (e *Emulator) serveEC2(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeError(w, serviceEC2, newError(http.StatusBadRequest, "MalformedQueryString", "%v", err))
		return
	}
	form := r.Form
	action := form.Get("Action")
	var (
		result any
		err    *apiError
	)
	switch action {
	case "DescribeInstanceTypes":
		result, err = describeInstanceTypes(form)
	case "DescribeInstanceTypeOfferings":
		result, err = e.describeInstanceTypeOfferings(form)
	case "DescribeSubnets":
		result, err = e.describeSubnets(form)
	case "DescribeSpotPriceHistory":
		result, err = e.describeSpotPriceHistory(form)
	case "DescribeCapacityReservations":
		result, err = e.describeCapacityReservations(form)
	case "DescribeCapacityBlockOfferings":
		result, err = e.describeCapacityBlockOfferings(form)
	case "DescribeCapacityBlocks":
		result, err = e.describeCapacityBlocks(form)
	case "DescribeCapacityBlockStatus":
		result, err = e.describeCapacityBlockStatus(form)
	case "DescribeCapacityBlockExtensionOfferings":
		result, err = e.describeCapacityBlockExtensionOfferings(form)
	case "DescribeCapacityReservationTopology":
		result, err = e.describeCapacityReservationTopology(form)
	case "CreateLaunchTemplate":
		result, err = e.createLaunchTemplate(form)
	case "CreateLaunchTemplateVersion":
		result, err = e.createLaunchTemplateVersion(form)
	case "DescribeLaunchTemplates":
		result, err = e.describeLaunchTemplates(form)
	case "DescribeLaunchTemplateVersions":
		result, err = e.describeLaunchTemplateVersions(form)
	case "DeleteLaunchTemplate":
		result, err = e.deleteLaunchTemplate(form)
	default:
		writeError(w, serviceEC2, newError(http.StatusBadRequest, "InvalidAction", "The action %s is not valid for this web service.", action))
		return
	}
	e.countCall(serviceEC2, action)
	if err != nil {
		writeError(w, serviceEC2, err)
		return
	}
	writeEC2Result(w, action, result)
}

// maxResultsParam reads MaxResults within [lo, hi]; 0 when absent.
func maxResultsParam(form url.Values, name string, lo, hi int) (int, *apiError) {
	v := form.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, newError(http.StatusBadRequest, "InvalidParameterValue", "Value ( %s ) for parameter %s is invalid. Expecting a value between %d and %d.", v, name, lo, hi)
	}
	return n, nil
}

func errInvalidToken(token string) *apiError {
	return newError(http.StatusBadRequest, "InvalidParameterValue", "The nextToken %q is invalid.", token)
}

func errInvalidFilter(name string) *apiError {
	return newError(http.StatusBadRequest, "InvalidParameterValue", "The filter '%s' is invalid", name)
}

// The DescribeInstanceTypes documents (InstanceTypeInfo and its parts,
// with EC2's XML member names).
type instanceTypeInfo struct {
	InstanceType                  string            `xml:"instanceType"`
	CurrentGeneration             bool              `xml:"currentGeneration"`
	FreeTierEligible              bool              `xml:"freeTierEligible"`
	SupportedUsageClasses         []string          `xml:"supportedUsageClasses>item"`
	SupportedRootDeviceTypes      []string          `xml:"supportedRootDeviceTypes>item"`
	SupportedVirtualizationTypes  []string          `xml:"supportedVirtualizationTypes>item"`
	BareMetal                     bool              `xml:"bareMetal"`
	Hypervisor                    string            `xml:"hypervisor,omitempty"`
	ProcessorInfo                 processorInfo     `xml:"processorInfo"`
	VCPUInfo                      vcpuInfo          `xml:"vCpuInfo"`
	MemoryInfo                    sizeInMiB         `xml:"memoryInfo"`
	InstanceStorageSupported      bool              `xml:"instanceStorageSupported"`
	GPUInfo                       *gpuInfo          `xml:"gpuInfo"`
	NeuronInfo                    *neuronInfo       `xml:"neuronInfo"`
	BurstablePerformanceSupported bool              `xml:"burstablePerformanceSupported"`
	DedicatedHostsSupported       bool              `xml:"dedicatedHostsSupported"`
	AutoRecoverySupported         bool              `xml:"autoRecoverySupported"`
	SupportedBootModes            []string          `xml:"supportedBootModes>item"`
	NetworkInfo                   *instanceNetworks `xml:"networkInfo"`
}

type processorInfo struct {
	SupportedArchitectures []string `xml:"supportedArchitectures>item"`
	Manufacturer           string   `xml:"manufacturer"`
}

type vcpuInfo struct {
	DefaultVCpus          int `xml:"defaultVCpus"`
	DefaultCores          int `xml:"defaultCores"`
	DefaultThreadsPerCore int `xml:"defaultThreadsPerCore"`
}

type sizeInMiB struct {
	SizeInMiB int64 `xml:"sizeInMiB"`
}

type gpuDevice struct {
	Name         string    `xml:"name"`
	Manufacturer string    `xml:"manufacturer"`
	Count        int       `xml:"count"`
	MemoryInfo   sizeInMiB `xml:"memoryInfo"`
}

type gpuInfo struct {
	GPUs                []gpuDevice `xml:"gpus>item"`
	TotalGPUMemoryInMiB int64       `xml:"totalGpuMemoryInMiB"`
}

type neuronDevice struct {
	Count      int       `xml:"count"`
	Name       string    `xml:"name"`
	MemoryInfo sizeInMiB `xml:"memoryInfo"`
}

type neuronInfo struct {
	NeuronDevices                []neuronDevice `xml:"neuronDevices>item"`
	TotalNeuronDeviceMemoryInMiB int64          `xml:"totalNeuronDeviceMemoryInMiB"`
}

type instanceNetworks struct {
	MaximumNetworkInterfaces int    `xml:"maximumNetworkInterfaces"`
	NetworkPerformance       string `xml:"networkPerformance"`
}

// instanceTypeInfoFor renders a catalog entry as DescribeInstanceTypes
// does.
func instanceTypeInfoFor(t ec2catalog.InstanceType) instanceTypeInfo {
	vcpus, _ := strconv.Atoi(t.CPU)
	manufacturer := "Intel"
	if t.Architecture == ec2catalog.ArchitectureARM64 {
		manufacturer = "AWS"
	} else if strings.HasPrefix(t.Name, "g4ad") || strings.HasPrefix(t.Name, "p5en") {
		manufacturer = "AMD"
	}
	threads := 2
	if t.Architecture == ec2catalog.ArchitectureARM64 {
		threads = 1
	}
	usage := []string{"on-demand", "spot"}
	family, _, _ := strings.Cut(t.Name, ".")
	if sellsCapacityBlocks(t.Name) {
		usage = append(usage, "capacity-block")
	}
	hypervisor := "nitro"
	if family == "p3" {
		hypervisor = "xen"
	}
	bareMetal := strings.HasSuffix(t.Name, ".metal")
	if bareMetal {
		hypervisor = ""
	}
	info := instanceTypeInfo{
		InstanceType:                 t.Name,
		CurrentGeneration:            true,
		SupportedUsageClasses:        usage,
		SupportedRootDeviceTypes:     []string{"ebs"},
		SupportedVirtualizationTypes: []string{"hvm"},
		BareMetal:                    bareMetal,
		Hypervisor:                   hypervisor,
		ProcessorInfo:                processorInfo{SupportedArchitectures: []string{t.Architecture}, Manufacturer: manufacturer},
		VCPUInfo:                     vcpuInfo{DefaultVCpus: vcpus, DefaultCores: vcpus / threads, DefaultThreadsPerCore: threads},
		MemoryInfo:                   sizeInMiB{SizeInMiB: int64(t.MemoryGi) * 1024},
		DedicatedHostsSupported:      true,
		AutoRecoverySupported:        !bareMetal,
		SupportedBootModes:           []string{"legacy-bios", "uefi"},
		NetworkInfo:                  &instanceNetworks{MaximumNetworkInterfaces: 8, NetworkPerformance: "Up to 25 Gigabit"},
	}
	if a := t.EC2Accelerator; a.Count > 0 {
		total := int64(a.Count) * int64(a.MemoryMiB)
		switch a.Info {
		case ec2catalog.AcceleratorInfoNeuron:
			info.NeuronInfo = &neuronInfo{
				NeuronDevices:                []neuronDevice{{Count: a.Count, Name: a.Name, MemoryInfo: sizeInMiB{int64(a.MemoryMiB)}}},
				TotalNeuronDeviceMemoryInMiB: total,
			}
		default:
			info.GPUInfo = &gpuInfo{
				GPUs:                []gpuDevice{{Name: a.Name, Manufacturer: a.Manufacturer, Count: a.Count, MemoryInfo: sizeInMiB{int64(a.MemoryMiB)}}},
				TotalGPUMemoryInMiB: total,
			}
		}
	}
	return info
}

type describeInstanceTypesResult struct {
	RequestID     string             `xml:"requestId"`
	InstanceTypes []instanceTypeInfo `xml:"instanceTypeSet>item"`
	NextToken     string             `xml:"nextToken,omitempty"`
}

// describeInstanceTypes: InstanceType.N (each must exist), filters
// instance-type (wildcards), processor-info.supported-architecture,
// current-generation, bare-metal, vcpu-info.default-vcpus,
// memory-info.size-in-mib (names from the SDK's DescribeInstanceTypesInput
// docs, which list no GPU filter: a name EC2 does not document is refused as
// EC2 refuses one, InvalidParameterValue "The filter '...' is invalid");
// MaxResults 5..100 with NextToken.
func describeInstanceTypes(form url.Values) (any, *apiError) {
	maxResults, err := maxResultsParam(form, "MaxResults", 5, 100)
	if err != nil {
		return nil, err
	}
	if maxResults == 0 {
		maxResults = 100
	}
	names := queryList(form, "InstanceType")
	var types []ec2catalog.InstanceType
	if len(names) > 0 {
		var unknown []string
		for _, name := range names {
			t, ok := ec2catalog.Lookup(name)
			if !ok {
				unknown = append(unknown, name)
				continue
			}
			if !slices.ContainsFunc(types, func(have ec2catalog.InstanceType) bool { return have.Name == name }) {
				types = append(types, t)
			}
		}
		if len(unknown) > 0 {
			return nil, newError(http.StatusBadRequest, "InvalidInstanceType", "The following supplied instance types do not exist: [%s]", strings.Join(unknown, ", "))
		}
		slices.SortFunc(types, func(a, b ec2catalog.InstanceType) int { return strings.Compare(a.Name, b.Name) })
	} else {
		types = ec2catalog.All()
	}
	for _, f := range queryFilters(form, true) {
		var keep func(ec2catalog.InstanceType) bool
		switch f.name {
		case "instance-type":
			keep = func(t ec2catalog.InstanceType) bool { return matchesAny(f.values, t.Name) }
		case "processor-info.supported-architecture":
			keep = func(t ec2catalog.InstanceType) bool { return matchesAny(f.values, t.Architecture) }
		case "current-generation":
			keep = func(ec2catalog.InstanceType) bool { return matchesAny(f.values, "true") }
		case "bare-metal":
			keep = func(t ec2catalog.InstanceType) bool {
				return matchesAny(f.values, strconv.FormatBool(strings.HasSuffix(t.Name, ".metal")))
			}
		case "vcpu-info.default-vcpus":
			keep = func(t ec2catalog.InstanceType) bool { return matchesAny(f.values, t.CPU) }
		case "memory-info.size-in-mib":
			keep = func(t ec2catalog.InstanceType) bool { return matchesAny(f.values, strconv.Itoa(t.MemoryGi*1024)) }
		default:
			return nil, errInvalidFilter(f.name)
		}
		types = slices.DeleteFunc(types, func(t ec2catalog.InstanceType) bool { return !keep(t) })
	}
	pageTypes, next, ok := page(types, maxResults, form.Get("NextToken"))
	if !ok {
		return nil, errInvalidToken(form.Get("NextToken"))
	}
	result := describeInstanceTypesResult{RequestID: nextRequestID(), NextToken: next}
	for _, t := range pageTypes {
		result.InstanceTypes = append(result.InstanceTypes, instanceTypeInfoFor(t))
	}
	return result, nil
}

type instanceTypeOffering struct {
	InstanceType string `xml:"instanceType"`
	LocationType string `xml:"locationType"`
	Location     string `xml:"location"`
}

type describeOfferingsResult struct {
	RequestID string                 `xml:"requestId"`
	Offerings []instanceTypeOffering `xml:"instanceTypeOfferingSet>item"`
	NextToken string                 `xml:"nextToken,omitempty"`
}

// describeInstanceTypeOfferings: LocationType region (default),
// availability-zone or availability-zone-id; filters location and
// instance-type; MaxResults 5..1000 with NextToken.
func (e *Emulator) describeInstanceTypeOfferings(form url.Values) (any, *apiError) {
	maxResults, err := maxResultsParam(form, "MaxResults", 5, 1000)
	if err != nil {
		return nil, err
	}
	locationType := form.Get("LocationType")
	if locationType == "" {
		locationType = "region"
	}
	var offerings []instanceTypeOffering
	for _, t := range ec2catalog.All() {
		switch locationType {
		case "region":
			offerings = append(offerings, instanceTypeOffering{t.Name, locationType, e.opts.Region})
		case "availability-zone", "availability-zone-id":
			for i, zone := range zones(e.opts.Region) {
				if !offered(t.Name, zone) {
					continue
				}
				location := zone
				if locationType == "availability-zone-id" {
					location = testSubnets[i].zoneID
				}
				offerings = append(offerings, instanceTypeOffering{t.Name, locationType, location})
			}
		default:
			return nil, newError(http.StatusBadRequest, "InvalidParameterValue", "Value (%s) for parameter locationType is invalid. Valid values are: region, availability-zone, availability-zone-id, outpost.", locationType)
		}
	}
	for _, f := range queryFilters(form, true) {
		var keep func(instanceTypeOffering) bool
		switch f.name {
		case "location":
			keep = func(o instanceTypeOffering) bool { return matchesAny(f.values, o.Location) }
		case "instance-type":
			keep = func(o instanceTypeOffering) bool { return matchesAny(f.values, o.InstanceType) }
		default:
			return nil, errInvalidFilter(f.name)
		}
		offerings = slices.DeleteFunc(offerings, func(o instanceTypeOffering) bool { return !keep(o) })
	}
	pageOfferings, next, ok := page(offerings, maxResults, form.Get("NextToken"))
	if !ok {
		return nil, errInvalidToken(form.Get("NextToken"))
	}
	return describeOfferingsResult{RequestID: nextRequestID(), Offerings: pageOfferings, NextToken: next}, nil
}

type ec2Tag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

type subnetDoc struct {
	SubnetID                string   `xml:"subnetId"`
	SubnetArn               string   `xml:"subnetArn"`
	State                   string   `xml:"state"`
	VpcID                   string   `xml:"vpcId"`
	OwnerID                 string   `xml:"ownerId"`
	CidrBlock               string   `xml:"cidrBlock"`
	AvailableIPAddressCount int      `xml:"availableIpAddressCount"`
	AvailabilityZone        string   `xml:"availabilityZone"`
	AvailabilityZoneID      string   `xml:"availabilityZoneId"`
	DefaultForAz            bool     `xml:"defaultForAz"`
	MapPublicIPOnLaunch     bool     `xml:"mapPublicIpOnLaunch"`
	TagSet                  []ec2Tag `xml:"tagSet>item"`
}

type describeSubnetsResult struct {
	RequestID string      `xml:"requestId"`
	Subnets   []subnetDoc `xml:"subnetSet>item"`
	NextToken string      `xml:"nextToken,omitempty"`
}

// describeSubnets: SubnetId.N (each must exist: InvalidSubnetID.NotFound),
// filters subnet-id, availability-zone, vpc-id.
func (e *Emulator) describeSubnets(form url.Values) (any, *apiError) {
	maxResults, err := maxResultsParam(form, "MaxResults", 5, 1000)
	if err != nil {
		return nil, err
	}
	var docs []subnetDoc
	for _, s := range testSubnets {
		zone := e.opts.Region + s.zoneSuffix
		docs = append(docs, subnetDoc{
			SubnetID:                s.id,
			SubnetArn:               "arn:aws:ec2:" + e.opts.Region + ":" + AccountID + ":subnet/" + s.id,
			State:                   "available",
			VpcID:                   testVPC,
			OwnerID:                 AccountID,
			CidrBlock:               s.cidr,
			AvailableIPAddressCount: 8186,
			AvailabilityZone:        zone,
			AvailabilityZoneID:      s.zoneID,
			TagSet:                  []ec2Tag{{Key: "Name", Value: "gpu-testbed-private-" + zone}},
		})
	}
	if ids := queryList(form, "SubnetId"); len(ids) > 0 {
		for _, id := range ids {
			if !slices.ContainsFunc(docs, func(d subnetDoc) bool { return d.SubnetID == id }) {
				return nil, newError(http.StatusBadRequest, "InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
			}
		}
		docs = slices.DeleteFunc(docs, func(d subnetDoc) bool { return !slices.Contains(ids, d.SubnetID) })
	}
	for _, f := range queryFilters(form, true) {
		var keep func(subnetDoc) bool
		switch f.name {
		case "subnet-id":
			keep = func(d subnetDoc) bool { return matchesAny(f.values, d.SubnetID) }
		case "availability-zone":
			keep = func(d subnetDoc) bool { return matchesAny(f.values, d.AvailabilityZone) }
		case "vpc-id":
			keep = func(d subnetDoc) bool { return matchesAny(f.values, d.VpcID) }
		default:
			return nil, errInvalidFilter(f.name)
		}
		docs = slices.DeleteFunc(docs, func(d subnetDoc) bool { return !keep(d) })
	}
	pageDocs, next, ok := page(docs, maxResults, form.Get("NextToken"))
	if !ok {
		return nil, errInvalidToken(form.Get("NextToken"))
	}
	return describeSubnetsResult{RequestID: nextRequestID(), Subnets: pageDocs, NextToken: next}, nil
}

type spotPrice struct {
	AvailabilityZone   string `xml:"availabilityZone"`
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
}

type describeSpotPriceHistoryResult struct {
	RequestID string      `xml:"requestId"`
	Prices    []spotPrice `xml:"spotPriceHistorySet>item"`
	NextToken string      `xml:"nextToken,omitempty"`
}

// describeSpotPriceHistory answers with one synthetic price per instance
// type, AZ and product description, stamped at the start of the current
// hour: the latest price, as a query with StartTime now gets from EC2.
// Filters: instance-type, availability-zone, product-description.
func (e *Emulator) describeSpotPriceHistory(form url.Values) (any, *apiError) {
	maxResults, err := maxResultsParam(form, "MaxResults", 5, 1000)
	if err != nil {
		return nil, err
	}
	types := queryList(form, "InstanceType")
	products := queryList(form, "ProductDescription")
	if len(products) == 0 {
		products = []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}
	}
	zoneParam := form.Get("AvailabilityZone")
	stamp := time.Now().UTC().Truncate(time.Hour).Format("2006-01-02T15:04:05.000Z")
	var prices []spotPrice
	for _, t := range ec2catalog.All() {
		if len(types) > 0 && !slices.Contains(types, t.Name) {
			continue
		}
		for i, zone := range zones(e.opts.Region) {
			if !offered(t.Name, zone) || (zoneParam != "" && zoneParam != zone) {
				continue
			}
			for _, product := range products {
				prices = append(prices, spotPrice{zone, t.Name, product, fmt.Sprintf("%.6f", syntheticSpotPrice(t, i)), stamp})
			}
		}
	}
	for _, f := range queryFilters(form, true) {
		var keep func(spotPrice) bool
		switch f.name {
		case "instance-type":
			keep = func(p spotPrice) bool { return matchesAny(f.values, p.InstanceType) }
		case "availability-zone":
			keep = func(p spotPrice) bool { return matchesAny(f.values, p.AvailabilityZone) }
		case "product-description":
			keep = func(p spotPrice) bool { return matchesAny(f.values, p.ProductDescription) }
		default:
			return nil, errInvalidFilter(f.name)
		}
		prices = slices.DeleteFunc(prices, func(p spotPrice) bool { return !keep(p) })
	}
	pagePrices, next, ok := page(prices, maxResults, form.Get("NextToken"))
	if !ok {
		return nil, errInvalidToken(form.Get("NextToken"))
	}
	return describeSpotPriceHistoryResult{RequestID: nextRequestID(), Prices: pagePrices, NextToken: next}, nil
}

// gpuHourlyUSD is a made-up spot price per accelerator and hour, by
// device name; unlisted devices cost 0.20.
var gpuHourlyUSD = map[string]float64{
	"T4": 0.15, "T4g": 0.12, "A10G": 0.35, "L4": 0.25, "L40S": 0.60, "V100": 0.90,
	"A100": 1.20, "H100": 2.50, "H200": 3.00, "Radeon Pro V520": 0.10,
	"Gaudi HL-205": 0.50, "Inferentia2": 0.12, "Trainium": 0.40,
}

// syntheticSpotPrice is deterministic: accelerators plus 0.01 per vCPU,
// 4% more in each further AZ. Real spot prices are not reproduced.
func syntheticSpotPrice(t ec2catalog.InstanceType, zoneIndex int) float64 {
	vcpus, _ := strconv.Atoi(t.CPU)
	price := 0.01 * float64(vcpus)
	if a := t.EC2Accelerator; a.Count > 0 {
		perDevice, ok := gpuHourlyUSD[a.Name]
		if !ok {
			perDevice = 0.20
		}
		price += perDevice * float64(a.Count)
	}
	return price * (1 + 0.04*float64(zoneIndex))
}
