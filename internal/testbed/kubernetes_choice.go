package testbed

import (
	"fmt"
	"os"
	"strings"
)

// KubernetesChoiceEnv names the environment variable that chooses which of
// the testbed's two control planes a run starts: "newest"
// (KubernetesVersion, the default) or "oldest" (OldestKubernetesVersion,
// which make test also runs the Kubernetes acceptance tests against).
const KubernetesChoiceEnv = "GPU_TESTBED_KUBERNETES"

// The values KubernetesChoiceEnv takes.
const (
	KubernetesNewest = "newest"
	KubernetesOldest = "oldest"
)

// ChosenKubernetesVersion is the Kubernetes release $GPU_TESTBED_KUBERNETES
// chooses: KubernetesVersion when it is unset or "newest",
// OldestKubernetesVersion when it is "oldest". Any other value is an error
// naming the valid ones.
func ChosenKubernetesVersion() (string, error) {
	switch choice := strings.TrimSpace(os.Getenv(KubernetesChoiceEnv)); choice {
	case "", KubernetesNewest:
		return KubernetesVersion, nil
	case KubernetesOldest:
		return OldestKubernetesVersion, nil
	default:
		return "", fmt.Errorf("reading %s=%q: valid values are %q (Kubernetes %s, the default) and %q (Kubernetes %s)",
			KubernetesChoiceEnv, choice, KubernetesNewest, KubernetesVersion, KubernetesOldest, OldestKubernetesVersion)
	}
}

// KubernetesChoice is the word KubernetesChoiceEnv takes for version:
// "newest" or "oldest"; "" for a version the testbed does not build.
func KubernetesChoice(version string) string {
	switch version {
	case KubernetesVersion:
		return KubernetesNewest
	case OldestKubernetesVersion:
		return KubernetesOldest
	default:
		return ""
	}
}
