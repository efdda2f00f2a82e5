package eks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// InstanceType is what EC2's DescribeInstanceTypes says about one type.
type InstanceType struct {
	Name          string
	Architectures []string // "x86_64", "arm64" (EC2's names)
	VCPUs         int
	MemoryMiB     int64
	// Accelerators: GpuInfo's GPUs, then NeuronInfo's devices, then InferenceAcceleratorInfo's.
	Accelerators []Accelerator
}

// Accelerator is one kind of accelerator device an instance type has.
type Accelerator struct {
	Kind         string // "gpu", "neuron", "inference"
	Manufacturer string // "NVIDIA", "AMD", "AWS", ...
	Name         string // "H100", "A10G", "Inferentia2", ...
	Count        int
	MemoryMiB    int64 // per device
}

// Accelerator kinds.
const (
	AcceleratorGPU       = "gpu"
	AcceleratorNeuron    = "neuron"
	AcceleratorInference = "inference"
)

// NVIDIAGPUs returns the type's NVIDIA GPU entry, if it has one.
func (t InstanceType) NVIDIAGPUs() (Accelerator, bool) {
	for _, a := range t.Accelerators {
		if a.Kind == AcceleratorGPU && strings.EqualFold(a.Manufacturer, "NVIDIA") {
			return a, true
		}
	}
	return Accelerator{}, false
}

// describeInstanceTypesPageSize is DescribeInstanceTypes' MaxResults limit
// (5 to 100); asking by name takes at most 100 names per call.
const describeInstanceTypesPageSize = 100

// InstanceTypes returns the facts of each named type, calling
// DescribeInstanceTypes only for names this Client has not seen yet (one call
// per 100 names). Names EC2 does not know give *UnknownInstanceTypesError.
func (c *Client) InstanceTypes(ctx context.Context, names []string) (map[string]InstanceType, error) {
	c.instanceTypesMu.Lock()
	defer c.instanceTypesMu.Unlock()
	var missing []string
	for _, n := range names {
		if _, ok := c.instanceTypes[n]; !ok && !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	for chunk := range slices.Chunk(missing, describeInstanceTypesPageSize) {
		if err := c.describeInstanceTypes(ctx, chunk); err != nil {
			return nil, err
		}
	}
	out := make(map[string]InstanceType, len(names))
	var unknown []string
	for _, n := range names {
		t, ok := c.instanceTypes[n]
		if !ok {
			if !slices.Contains(unknown, n) {
				unknown = append(unknown, n)
			}
			continue
		}
		out[n] = t
	}
	if len(unknown) > 0 {
		return nil, &UnknownInstanceTypesError{Names: unknown, Region: c.region}
	}
	return out, nil
}

// describeInstanceTypes asks for the named types and caches what comes back.
// EC2 answers InvalidInstanceType when any name is unknown; the names are then
// asked one by one so the known ones are still learnt and the unknown ones named.
func (c *Client) describeInstanceTypes(ctx context.Context, names []string) error {
	err := c.describeInstanceTypesPages(ctx, &ec2.DescribeInstanceTypesInput{
		InstanceTypes: toEC2InstanceTypes(names),
	})
	if err == nil || apiErrorCode(err) != "InvalidInstanceType" || len(names) == 1 {
		if apiErrorCode(err) == "InvalidInstanceType" {
			return nil // the one name is unknown: InstanceTypes reports it
		}
		return err
	}
	for _, n := range names {
		if err := c.describeInstanceTypes(ctx, []string{n}); err != nil {
			return err
		}
	}
	return nil
}

func (c *Client) describeInstanceTypesPages(ctx context.Context, in *ec2.DescribeInstanceTypesInput) error {
	p := ec2.NewDescribeInstanceTypesPaginator(c.ec2, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing EC2 instance types: %w", err)
		}
		for _, info := range page.InstanceTypes {
			t := instanceTypeFromEC2(info)
			c.instanceTypes[t.Name] = t
		}
	}
	return nil
}

func toEC2InstanceTypes(names []string) []ec2types.InstanceType {
	out := make([]ec2types.InstanceType, len(names))
	for i, n := range names {
		out[i] = ec2types.InstanceType(n)
	}
	return out
}

func instanceTypeFromEC2(info ec2types.InstanceTypeInfo) InstanceType {
	t := InstanceType{Name: string(info.InstanceType)}
	if info.ProcessorInfo != nil {
		for _, a := range info.ProcessorInfo.SupportedArchitectures {
			t.Architectures = append(t.Architectures, string(a))
		}
	}
	if info.VCpuInfo != nil {
		t.VCPUs = int(aws.ToInt32(info.VCpuInfo.DefaultVCpus))
	}
	if info.MemoryInfo != nil {
		t.MemoryMiB = aws.ToInt64(info.MemoryInfo.SizeInMiB)
	}
	if info.GpuInfo != nil {
		for _, g := range info.GpuInfo.Gpus {
			a := Accelerator{
				Kind:         AcceleratorGPU,
				Manufacturer: aws.ToString(g.Manufacturer),
				Name:         aws.ToString(g.Name),
				Count:        int(aws.ToInt32(g.Count)),
			}
			if g.MemoryInfo != nil {
				a.MemoryMiB = int64(aws.ToInt32(g.MemoryInfo.SizeInMiB))
			}
			t.Accelerators = append(t.Accelerators, a)
		}
	}
	if info.NeuronInfo != nil {
		for _, d := range info.NeuronInfo.NeuronDevices {
			a := Accelerator{
				Kind:         AcceleratorNeuron,
				Manufacturer: "AWS",
				Name:         aws.ToString(d.Name),
				Count:        int(aws.ToInt32(d.Count)),
			}
			if d.MemoryInfo != nil {
				a.MemoryMiB = int64(aws.ToInt32(d.MemoryInfo.SizeInMiB))
			}
			t.Accelerators = append(t.Accelerators, a)
		}
	}
	if info.InferenceAcceleratorInfo != nil {
		for _, d := range info.InferenceAcceleratorInfo.Accelerators {
			a := Accelerator{
				Kind:         AcceleratorInference,
				Manufacturer: aws.ToString(d.Manufacturer),
				Name:         aws.ToString(d.Name),
				Count:        int(aws.ToInt32(d.Count)),
			}
			if d.MemoryInfo != nil {
				a.MemoryMiB = int64(aws.ToInt32(d.MemoryInfo.SizeInMiB))
			}
			t.Accelerators = append(t.Accelerators, a)
		}
	}
	return t
}
