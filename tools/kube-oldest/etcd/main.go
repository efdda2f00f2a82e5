// Command etcd is etcd's own server (go.etcd.io/etcd/server/v3/etcdmain),
// built by the testbed beside the Kubernetes control plane from the version
// that Kubernetes release pins, so that no etcd has to be installed by hand.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
