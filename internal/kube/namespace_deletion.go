package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// A namespace that a resource created is deleted with it only when nothing
// is left in it that the resource did not create: a user's NGC pull
// Secret or ConfigMap put there later must not go with the device plugin.
// What is in a namespace is found the way `kubectl api-resources
// --namespaced --verbs=list` and `kubectl get` find it: every namespaced
// resource the API server serves, listed as metadata only.

// NamespaceKept says why a namespace a resource created was not deleted.
type NamespaceKept struct {
	Namespace string
	// Foreign names some objects in it that the resource did not create,
	// as "Kind/name", and Count how many there are in all.
	Foreign []string
	Count   int
	// Unlisted names resources whose objects could not be listed, so the
	// namespace could not be shown empty.
	Unlisted []string
}

func (k *NamespaceKept) String() string {
	var parts []string
	if k.Count > 0 {
		list := strings.Join(k.Foreign, ", ")
		if more := k.Count - len(k.Foreign); more > 0 {
			list += fmt.Sprintf(" and %d more", more)
		}
		parts = append(parts, "it holds objects this resource did not create: "+list)
	}
	if len(k.Unlisted) > 0 {
		parts = append(parts, "what it holds could not all be listed ("+strings.Join(k.Unlisted, "; ")+")")
	}
	return strings.Join(parts, "; ")
}

// foreignShown bounds the objects NamespaceKept names.
const foreignShown = 10

// alwaysThere are objects Kubernetes (or OpenShift) puts in every
// namespace: they never keep one alive.
var alwaysThere = map[string]bool{
	"ServiceAccount/default":             true,
	"ConfigMap/kube-root-ca.crt":         true,
	"ConfigMap/openshift-service-ca.crt": true,
}

// deleteNamespaceIfUnused deletes namespace when nothing is in it but what
// the owner made (or ignore excuses), or unconditionally when force; it
// returns what kept it otherwise. It waits until the namespace is gone.
func (c *Cluster) deleteNamespaceIfUnused(ctx context.Context, namespace string, owner Ownership, ignore func(kind, name string) bool, force bool) (*NamespaceKept, error) {
	ns, err := c.client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	if !force {
		kept, err := c.namespaceContents(ctx, namespace, owner, ignore)
		if err != nil {
			return nil, err
		}
		if kept != nil {
			return kept, nil
		}
	}
	opts := foreground()
	opts.Preconditions = &metav1.Preconditions{UID: &ns.UID}
	err = c.client.CoreV1().Namespaces().Delete(ctx, namespace, opts)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("deleting namespace %s: %w", namespace, err)
	}
	return nil, WaitForNamespaceGone(ctx, c.client, namespace)
}

// namespaceContents lists what is in namespace and returns nil when none
// of it keeps the namespace alive.
func (c *Cluster) namespaceContents(ctx context.Context, namespace string, owner Ownership, ignore func(kind, name string) bool) (*NamespaceKept, error) {
	kept := &NamespaceKept{Namespace: namespace}
	lists, err := c.client.Discovery().ServerPreferredNamespacedResources()
	if err != nil {
		var partial *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &partial) {
			return nil, fmt.Errorf("discovering the cluster's resources: %w", err)
		}
		for gv, e := range partial.Groups {
			kept.Unlisted = append(kept.Unlisted, fmt.Sprintf("API group %s: %v", gv, e))
		}
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range list.APIResources {
			if strings.Contains(res.Name, "/") || !slices.Contains(res.Verbs, "list") || res.Name == "events" {
				continue
			}
			err := c.eachObjectMeta(ctx, gv, res.Name, namespace, func(meta metav1.ObjectMeta) {
				if keepsNamespace(res.Kind, meta, owner, ignore) {
					if len(kept.Foreign) < foreignShown {
						kept.Foreign = append(kept.Foreign, res.Kind+"/"+meta.Name)
					}
					kept.Count++
				}
			})
			if err != nil {
				kept.Unlisted = append(kept.Unlisted, fmt.Sprintf("%s: %v", res.Name, err))
			}
		}
	}
	if kept.Count == 0 && len(kept.Unlisted) == 0 {
		return nil, nil
	}
	slices.Sort(kept.Unlisted)
	return kept, nil
}

// keepsNamespace reports whether an object keeps its namespace alive:
// not one owner made, not one being deleted, not one another object owns
// (the garbage collector deletes it with its owner, which is listed
// itself), not one Kubernetes puts in every namespace.
func keepsNamespace(kind string, meta metav1.ObjectMeta, owner Ownership, ignore func(kind, name string) bool) bool {
	switch {
	case meta.DeletionTimestamp != nil, len(meta.OwnerReferences) > 0:
		return false
	case owner.ID != "" && meta.Annotations[AnnotationOwner] == owner.ID:
		return false
	case alwaysThere[kind+"/"+meta.Name]:
		return false
	case ignore != nil && ignore(kind, meta.Name):
		return false
	}
	return true
}

// eachObjectMeta calls fn with the metadata of every object of resource in
// namespace, a page at a time.
func (c *Cluster) eachObjectMeta(ctx context.Context, gv schema.GroupVersion, resource, namespace string, fn func(metav1.ObjectMeta)) error {
	prefix := "/apis/" + gv.String()
	if gv.Group == "" {
		prefix = "/api/" + gv.Version
	}
	path := prefix + "/namespaces/" + namespace + "/" + resource
	cont := ""
	for {
		req := c.client.Discovery().RESTClient().Get().AbsPath(path).
			SetHeader("Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json").
			Param("limit", "250")
		if cont != "" {
			req = req.Param("continue", cont)
		}
		raw, err := req.Do(ctx).Raw()
		if err != nil {
			return err
		}
		var page metav1.PartialObjectMetadataList
		if err := json.Unmarshal(raw, &page); err != nil {
			return fmt.Errorf("decoding %s: %w", path, err)
		}
		for i := range page.Items {
			fn(page.Items[i].ObjectMeta)
		}
		if cont = page.Continue; cont == "" {
			return nil
		}
	}
}

// serviceEndpoints excuses the Endpoints object the endpoints controller
// keeps for a Service (same name, no owner reference), which it removes on
// its own once the Service is deleted.
func serviceEndpoints(services ...string) func(kind, name string) bool {
	return func(kind, name string) bool {
		return kind == "Endpoints" && slices.Contains(services, name)
	}
}
