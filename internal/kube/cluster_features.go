package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// draGroupVersion is the Dynamic Resource Allocation API this package
// speaks: resource.k8s.io/v1, GA and served by default from Kubernetes 1.34.
const draGroupVersion = "resource.k8s.io/v1"

// draFirstMinor is the first Kubernetes 1.x minor that serves draGroupVersion.
const draFirstMinor = 34

// draResources are the resources of draGroupVersion this package uses.
var draResources = []string{"deviceclasses", "resourceclaims", "resourceclaimtemplates", "resourceslices"}

// DRAUnavailableError says that a cluster does not serve the Dynamic
// Resource Allocation API, with the cluster's version and what it takes.
type DRAUnavailableError struct {
	// ServerVersion is the API server's gitVersion ("v1.33.5").
	ServerVersion string
	// Missing lists the resources of resource.k8s.io/v1 it does not serve;
	// all of them when the group version is not served at all.
	Missing []string
}

func (e *DRAUnavailableError) Error() string {
	if minor, ok := serverMinor(e.ServerVersion); ok && minor < draFirstMinor {
		return fmt.Sprintf("the cluster runs Kubernetes %s, which does not serve %s: Dynamic Resource Allocation "+
			"through %s needs Kubernetes 1.%d or newer, where it is on by default; upgrade the cluster, or use the device plugin",
			e.ServerVersion, draGroupVersion, draGroupVersion, draFirstMinor)
	}
	return fmt.Sprintf("the cluster runs Kubernetes %s but does not serve %s (%s): the API server turns it off "+
		"(--runtime-config=%s=false, or the DynamicResourceAllocation feature gate); turn it back on, or use the device plugin",
		e.ServerVersion, draGroupVersion, strings.Join(e.Missing, ", "), draGroupVersion)
}

// serverMinor reads the minor of a "v1.33.5"-style version.
func serverMinor(gitVersion string) (int, bool) {
	major, rest, ok := strings.Cut(strings.TrimPrefix(gitVersion, "v"), ".")
	if !ok || major != "1" {
		return 0, false
	}
	minor, _, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(minor)
	return n, err == nil
}

// draSupport caches a cluster's definite answer to RequireDRA; an answer
// that failed to arrive is asked again next time.
type draSupport struct {
	mu      sync.Mutex
	checked bool
	err     error // nil or *DRAUnavailableError
}

// RequireDRA returns nil when the cluster serves the Dynamic Resource
// Allocation API this package uses, a *DRAUnavailableError naming the
// cluster's version when it does not, and another error when discovery
// itself failed. A definite answer is cached for the Cluster's life.
func (c *Cluster) RequireDRA(ctx context.Context) error {
	c.dra.mu.Lock()
	defer c.dra.mu.Unlock()
	if c.dra.checked {
		return c.dra.err
	}
	missing, err := c.missingDRAResources(ctx)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		serverVersion, err := c.serverVersion(ctx)
		if err != nil {
			return err
		}
		c.dra.err = &DRAUnavailableError{ServerVersion: serverVersion, Missing: missing}
	}
	c.dra.checked = true
	return c.dra.err
}

// missingDRAResources lists the draResources that discovery does not
// find in draGroupVersion.
func (c *Cluster) missingDRAResources(ctx context.Context) ([]string, error) {
	var list metav1.APIResourceList
	body, err := c.client.Discovery().RESTClient().Get().AbsPath("/apis/"+draGroupVersion).
		SetHeader("Accept", "application/json").DoRaw(ctx)
	if apierrors.IsNotFound(err) {
		return slices.Clone(draResources), nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovering %s: %w", draGroupVersion, err)
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("reading the discovery document of %s: %w", draGroupVersion, err)
	}
	var missing []string
	for _, name := range draResources {
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == name }) {
			missing = append(missing, name)
		}
	}
	return missing, nil
}

// serverVersion asks the API server for its gitVersion.
func (c *Cluster) serverVersion(ctx context.Context) (string, error) {
	body, err := c.client.Discovery().RESTClient().Get().AbsPath("/version").
		SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the cluster's version: %w", err)
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return "", fmt.Errorf("reading the cluster's version: %w", err)
	}
	return info.GitVersion, nil
}
