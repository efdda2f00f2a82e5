package provider

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuinfra/terraform-provider-gpu/internal/kube"
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

// createErrorDetail is the detail of a failed create. An object that exists
// already is never taken over: the user imports it, or renames (the
// attribute rename names) this one.
func createErrorDetail(err error, id, rename string) string {
	var exists *kube.ExistsError
	if errors.As(err, &exists) {
		return fmt.Sprintf("%s. To manage it with Terraform, import it: terraform import <address> %s; or choose another %s.", exists, id, rename)
	}
	return err.Error()
}
