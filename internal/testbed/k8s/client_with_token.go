package k8s

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ClientWithToken is a client of the testbed's API server that
// authenticates with a bearer token (a service account's, say) instead of
// the admin's client certificate, trusting the testbed's CA.
func (c *Cluster) ClientWithToken(token string) (kubernetes.Interface, error) {
	admin := c.RESTConfig()
	cfg := &rest.Config{
		Host:            admin.Host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData, CAFile: admin.CAFile, ServerName: admin.ServerName},
	}
	return kubernetes.NewForConfig(cfg)
}
