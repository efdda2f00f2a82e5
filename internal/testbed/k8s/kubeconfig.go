package k8s

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// contextName names the cluster, user and context in every kubeconfig the
// testbed writes.
const contextName = "gpu-testbed"

// writeKubeconfig writes a self-contained kubeconfig (certificates inline)
// that verifies the API server against the testbed CA.
func writeKubeconfig(path, server string, caPEM []byte, client testbed.KeyPair) error {
	config := clientcmdapi.NewConfig()
	config.Clusters[contextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	config.AuthInfos[contextName] = &clientcmdapi.AuthInfo{ClientCertificateData: client.CertPEM, ClientKeyData: client.KeyPEM}
	config.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	config.CurrentContext = contextName
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// restConfigFor is the client configuration of one identity, without
// client-side rate limiting: tests create thousands of objects.
func restConfigFor(server string, caPEM []byte, client testbed.KeyPair) *rest.Config {
	return &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   caPEM,
			CertData: client.CertPEM,
			KeyData:  client.KeyPEM,
		},
		QPS:   -1, // no client-side rate limiter
		Burst: 1000,
	}
}

// withProtobuf makes a clientset for built-in types speak protobuf, which
// costs the API server and the client less than JSON with thousands of
// nodes.
func withProtobuf(config *rest.Config) *rest.Config {
	config = rest.CopyConfig(config)
	config.ContentType = "application/vnd.kubernetes.protobuf"
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return config
}
