package kube

import (
	clientfeatures "k8s.io/client-go/features"
)

// client-go v0.35 turned its WatchListClient gate on by default: informers,
// and LISTs without a page limit, then fetch a collection as a WATCH with
// sendInitialEvents ("streaming lists") instead of a LIST. The provider's
// reads and waits are built on LISTs: a refresh is answered only by LISTs
// sent after it began (hub_refresh.go), a wait's first read is a
// consistent LIST (TestWaitForObjectListsConsistently), a forbidden LIST
// ends a wait naming the verb, and the request budgets in bench/README.md
// count them. So the provider keeps client-go v0.34's behavior, whichever
// client-go it is built with: the gate is off in its process.
func init() {
	clientfeatures.ReplaceFeatureGates(withoutWatchList{clientfeatures.FeatureGates()})
}

// withoutWatchList is client-go's feature gates with WatchListClient off.
type withoutWatchList struct{ clientfeatures.Gates }

func (g withoutWatchList) Enabled(key clientfeatures.Feature) bool {
	return key != clientfeatures.WatchListClient && g.Gates.Enabled(key)
}
