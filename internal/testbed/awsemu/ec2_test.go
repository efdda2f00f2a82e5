package awsemu

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestDescribeInstanceTypesReportsGPUs(t *testing.T) {
	requireTestbed(t)
	ctx := context.Background()
	c := testClients()
	out, err := c.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"p5.48xlarge", "inf2.xlarge"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.InstanceTypes) != 2 {
		t.Fatalf("%d instance types", len(out.InstanceTypes))
	}
	inf2, p5 := out.InstanceTypes[0], out.InstanceTypes[1]
	if p5.InstanceType != "p5.48xlarge" || p5.GpuInfo == nil || len(p5.GpuInfo.Gpus) != 1 {
		t.Fatalf("p5.48xlarge: %+v", p5)
	}
	gpu := p5.GpuInfo.Gpus[0]
	if aws.ToString(gpu.Manufacturer) != "NVIDIA" || aws.ToString(gpu.Name) != "H100" || aws.ToInt32(gpu.Count) != 8 ||
		aws.ToInt32(gpu.MemoryInfo.SizeInMiB) != 81920 || aws.ToInt32(p5.GpuInfo.TotalGpuMemoryInMiB) != 8*81920 {
		t.Errorf("p5.48xlarge GPU %+v", gpu)
	}
	if aws.ToInt32(p5.VCpuInfo.DefaultVCpus) != 192 || aws.ToInt64(p5.MemoryInfo.SizeInMiB) != 2048*1024 ||
		!slices.Equal(p5.ProcessorInfo.SupportedArchitectures, []ec2types.ArchitectureType{"x86_64"}) {
		t.Errorf("p5.48xlarge vCPUs %d memory %d arch %v", aws.ToInt32(p5.VCpuInfo.DefaultVCpus), aws.ToInt64(p5.MemoryInfo.SizeInMiB), p5.ProcessorInfo.SupportedArchitectures)
	}
	if inf2.GpuInfo != nil || inf2.NeuronInfo == nil || aws.ToString(inf2.NeuronInfo.NeuronDevices[0].Name) != "Inferentia2" {
		t.Errorf("inf2.xlarge: GpuInfo %+v NeuronInfo %+v", inf2.GpuInfo, inf2.NeuronInfo)
	}

	_, err = c.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"p5.48xlarge", "p9.huge"}})
	if msg := apiErrorMessage(t, err, "InvalidInstanceType"); !contains(msg, "p9.huge") {
		t.Errorf("message %q does not name the unknown type", msg)
	}
}

func TestDescribeInstanceTypesFiltersAndPages(t *testing.T) {
	requireTestbed(t)
	var names []string
	paginator := ec2.NewDescribeInstanceTypesPaginator(testClients().ec2, &ec2.DescribeInstanceTypesInput{
		Filters:    []ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{"g6.*", "g6e.x*"}}},
		MaxResults: aws.Int32(5),
	})
	pages := 0
	for paginator.HasMorePages() {
		out, err := paginator.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, it := range out.InstanceTypes {
			names = append(names, string(it.InstanceType))
		}
	}
	want := []string{"g6.12xlarge", "g6.16xlarge", "g6.24xlarge", "g6.2xlarge", "g6.48xlarge", "g6.4xlarge", "g6.8xlarge", "g6.xlarge", "g6e.xlarge"}
	if !slices.Equal(names, want) || pages != 2 {
		t.Errorf("got %v in %d pages, want %v in 2", names, pages, want)
	}
}

func TestInstanceTypeOfferingsSubnetsAndSpotPrices(t *testing.T) {
	requireTestbed(t)
	ctx := context.Background()
	c := testClients()
	offerings, err := c.ec2.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
		Filters:      []ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{"p5.48xlarge"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var zones []string
	for _, o := range offerings.InstanceTypeOfferings {
		zones = append(zones, aws.ToString(o.Location))
	}
	if !slices.Equal(zones, []string{"us-west-2a", "us-west-2b", "us-west-2c"}) {
		t.Errorf("p5.48xlarge offered in %v", zones)
	}

	subnets, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0a1b2c3d4e5f60004"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(subnets.Subnets) != 1 || aws.ToString(subnets.Subnets[0].AvailabilityZone) != "us-west-2d" {
		t.Errorf("subnets %+v", subnets.Subnets)
	}
	_, err = c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0a1b2c3d4e5f60001", "subnet-0ffffffffffffffff"}})
	requireAPIError(t, err, "InvalidSubnetID.NotFound")

	prices := func() []string {
		out, err := c.ec2.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{
			InstanceTypes: []ec2types.InstanceType{"g5.xlarge"}, ProductDescriptions: []string{"Linux/UNIX"},
		})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range out.SpotPriceHistory {
			got = append(got, aws.ToString(p.AvailabilityZone)+"="+aws.ToString(p.SpotPrice))
		}
		return got
	}
	first := prices()
	if len(first) != 4 || !slices.Equal(first, prices()) {
		t.Errorf("spot prices %v are not one per AZ, or not deterministic", first)
	}
}

// EC2 documents no GPU filter for DescribeInstanceTypes: code that filters
// on one here must fail here as it would on AWS, not find GPUs.
func TestDescribeInstanceTypesRefusesUndocumentedFilters(t *testing.T) {
	requireTestbed(t)
	for _, name := range []string{"gpu-info.name", "gpu-info.manufacturer", "tag:Name"} {
		_, err := testClients().ec2.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
			Filters: []ec2types.Filter{{Name: aws.String(name), Values: []string{"NVIDIA"}}},
		})
		if msg := apiErrorMessage(t, err, "InvalidParameterValue"); msg != "The filter '"+name+"' is invalid" {
			t.Errorf("%s: %q", name, msg)
		}
	}
	out, err := testClients().ec2.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
		Filters: []ec2types.Filter{{Name: aws.String("vcpu-info.default-vcpus"), Values: []string{"192"}}, {Name: aws.String("memory-info.size-in-mib"), Values: []string{"2097152"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range out.InstanceTypes {
		names = append(names, string(it.InstanceType))
	}
	if !slices.Contains(names, "p5.48xlarge") || slices.Contains(names, "g5.xlarge") {
		t.Errorf("vcpu/memory filters gave %v", names)
	}
}
