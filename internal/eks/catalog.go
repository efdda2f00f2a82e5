package eks

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// CatalogFilter selects NVIDIA GPU instance types from EC2's catalog. Zero
// fields select everything.
type CatalogFilter struct {
	GPUProducts       []string // GPU names as EC2 spells them ("H100", "A10G"), matched case-insensitively
	MinGPUMemoryGiB   float64  // per GPU
	MinGPUs, MaxGPUs  int      // GPUs per instance; 0: no bound
	Architectures     []string // "x86_64", "arm64"
	AvailabilityZones []string // keep types offered in at least one; Zones is cut to these
	SpotPrices        bool     // fill CatalogEntry.SpotPrices
}

// CatalogEntry is one NVIDIA GPU instance type of the region.
type CatalogEntry struct {
	InstanceType
	GPU        Accelerator
	Zones      []string           // availability zones offering the type, sorted
	SpotPrices map[string]float64 // AZ -> latest Linux/UNIX spot price in USD per hour; only when asked
}

// spotProductDescription is the spot price product of Linux instances.
const spotProductDescription = "Linux/UNIX"

// GPUCatalog lists the region's instance types with NVIDIA GPUs that pass the
// filter, sorted by name: DescribeInstanceTypes (all pages; the answers fill
// the Client's cache), DescribeInstanceTypeOfferings for their zones, and
// with SpotPrices DescribeSpotPriceHistory for the latest price per zone.
func (c *Client) GPUCatalog(ctx context.Context, f CatalogFilter) ([]CatalogEntry, error) {
	all, err := c.allInstanceTypes(ctx)
	if err != nil {
		return nil, err
	}
	var entries []CatalogEntry
	for _, t := range all {
		gpu, ok := t.NVIDIAGPUs()
		if ok && f.selects(t, gpu) {
			entries = append(entries, CatalogEntry{InstanceType: t, GPU: gpu})
		}
	}
	if len(entries) == 0 {
		return nil, nil
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	zones, err := c.OfferedZones(ctx, names)
	if err != nil {
		return nil, err
	}
	kept := entries[:0]
	for _, e := range entries {
		e.Zones = zones[e.Name]
		if len(f.AvailabilityZones) > 0 {
			e.Zones = slices.DeleteFunc(slices.Clone(e.Zones), func(z string) bool { return !slices.Contains(f.AvailabilityZones, z) })
			if len(e.Zones) == 0 {
				continue
			}
		}
		kept = append(kept, e)
	}
	entries = kept
	if f.SpotPrices && len(entries) > 0 {
		if err := c.fillSpotPrices(ctx, entries); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(entries, func(a, b CatalogEntry) int { return strings.Compare(a.Name, b.Name) })
	return entries, nil
}

func (f CatalogFilter) selects(t InstanceType, gpu Accelerator) bool {
	if len(f.GPUProducts) > 0 && !slices.ContainsFunc(f.GPUProducts, func(p string) bool { return strings.EqualFold(p, gpu.Name) }) {
		return false
	}
	if f.MinGPUMemoryGiB > 0 && float64(gpu.MemoryMiB) < f.MinGPUMemoryGiB*1024 {
		return false
	}
	if f.MinGPUs > 0 && gpu.Count < f.MinGPUs {
		return false
	}
	if f.MaxGPUs > 0 && gpu.Count > f.MaxGPUs {
		return false
	}
	if len(f.Architectures) > 0 && !slices.ContainsFunc(t.Architectures, func(a string) bool { return slices.Contains(f.Architectures, a) }) {
		return false
	}
	return true
}

// allInstanceTypes lists every instance type of the region (all pages of
// DescribeInstanceTypes) and caches each.
func (c *Client) allInstanceTypes(ctx context.Context) ([]InstanceType, error) {
	var all []InstanceType
	p := ec2.NewDescribeInstanceTypesPaginator(c.ec2, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(describeInstanceTypesPageSize)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing EC2 instance types: %w", err)
		}
		for _, info := range page.InstanceTypes {
			all = append(all, instanceTypeFromEC2(info))
		}
	}
	c.instanceTypesMu.Lock()
	for _, t := range all {
		c.instanceTypes[t.Name] = t
	}
	c.instanceTypesMu.Unlock()
	return all, nil
}

// fillSpotPrices sets each entry's latest spot price per offered zone. A
// StartTime of now makes EC2 answer the price in effect now for each type and
// zone (with its timestamp); the newest per zone wins.
func (c *Client) fillSpotPrices(ctx context.Context, entries []CatalogEntry) error {
	byName := make(map[string]*CatalogEntry, len(entries))
	names := make([]string, 0, len(entries))
	for i := range entries {
		byName[entries[i].Name] = &entries[i]
		entries[i].SpotPrices = map[string]float64{}
		names = append(names, entries[i].Name)
	}
	seenAt := map[[2]string]time.Time{}
	p := ec2.NewDescribeSpotPriceHistoryPaginator(c.ec2, &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes:       toEC2InstanceTypes(names),
		ProductDescriptions: []string{spotProductDescription},
		StartTime:           aws.Time(time.Now()),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing the spot price history of %v: %w", names, err)
		}
		for _, sp := range page.SpotPriceHistory {
			e := byName[string(sp.InstanceType)]
			zone := aws.ToString(sp.AvailabilityZone)
			if e == nil || !slices.Contains(e.Zones, zone) {
				continue
			}
			price, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
			if err != nil {
				return fmt.Errorf("EC2 answered spot price %q for %s in %s, not a number: %w", aws.ToString(sp.SpotPrice), e.Name, zone, err)
			}
			key, at := [2]string{e.Name, zone}, aws.ToTime(sp.Timestamp)
			if last, ok := seenAt[key]; ok && !at.After(last) {
				continue
			}
			seenAt[key] = at
			e.SpotPrices[zone] = price
		}
	}
	return nil
}
