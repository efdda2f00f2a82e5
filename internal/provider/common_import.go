package provider

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// parseNamespacedImportID splits an import ID of the form "namespace/name",
// the form `kubectl` prints, checking both parts are DNS-1123 names.
func parseNamespacedImportID(id string) (namespace, name string, err error) {
	parts := strings.Split(id, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", fmt.Errorf("import ID %q is not of the form namespace/name, e.g. \"default/train\"", id)
	}
	namespace, name = parts[0], parts[1]
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return "", "", fmt.Errorf("import ID %q: namespace %q is not a DNS-1123 label: %s", id, namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", "", fmt.Errorf("import ID %q: name %q is not a DNS-1123 subdomain: %s", id, name, strings.Join(errs, "; "))
	}
	return namespace, name, nil
}
