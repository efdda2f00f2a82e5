module github.com/gpuinfra/terraform-provider-gpu/internal/bootstrap/testdata/runtime/oracle

go 1.26.0

require github.com/NVIDIA/nvidia-container-toolkit v1.20.1

require (
	github.com/pelletier/go-toml v1.9.5 // indirect
	github.com/sirupsen/logrus v1.9.4 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
