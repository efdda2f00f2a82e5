// Command terraform-provider-gpu is the Terraform provider for NVIDIA GPU
// infrastructure: EKS GPU node groups, Proxmox GPU passthrough VMs, the NVIDIA
// device plugin and GPU workloads on Kubernetes, and a GPU inventory.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/gpuinfra/terraform-provider-gpu/internal/provider"
)

// version is set by goreleaser through -ldflags "-X main.version=...".
var version = "dev"

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()

	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/gpuinfra/gpu",
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}
