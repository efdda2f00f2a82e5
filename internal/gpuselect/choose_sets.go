package gpuselect

// candidateSet is one set of eligible GPUs (indices into the eligible
// slice) with the keys it is ranked by.
type candidateSet struct {
	members         []int
	allNVLink       bool
	bottleneck      int
	bottleneckLevel string
	utilization     uint64 // sum of the members' utilization; unknown counts 0
	freeMiB         uint64 // sum of the members' free memory
}

// maxSetsCompared bounds the exhaustive search: past it (more than about
// 20 GPUs at once) the sets are built greedily by preference alone.
const maxSetsCompared = 200_000

// bestSet returns the best set of req.Count eligible GPUs.
func bestSet(req Request, eligible []GPU, links linkTable) candidateSet {
	if binomial(len(eligible), req.Count) > maxSetsCompared {
		return greedySet(req, eligible, links)
	}
	var best candidateSet
	found := false
	members := make([]int, req.Count)
	var walk func(start, depth int)
	walk = func(start, depth int) {
		if depth == req.Count {
			set := scoreSet(append([]int(nil), members...), eligible, links)
			if !found || better(req, set, best, eligible) {
				best, found = set, true
			}
			return
		}
		for i := start; i <= len(eligible)-(req.Count-depth); i++ {
			members[depth] = i
			walk(i+1, depth+1)
		}
	}
	walk(0, 0)
	return best
}

// greedySet takes the Count best GPUs by preference alone.
func greedySet(req Request, eligible []GPU, links linkTable) candidateSet {
	order := make([]int, len(eligible))
	for i := range order {
		order[i] = i
	}
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && preferGPU(req, eligible[order[j]], eligible[order[j-1]]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	return scoreSet(order[:req.Count], eligible, links)
}

func scoreSet(members []int, eligible []GPU, links linkTable) candidateSet {
	s := candidateSet{members: members, allNVLink: true, bottleneck: 1 << 30}
	for a := 0; a < len(members); a++ {
		g := eligible[members[a]]
		s.freeMiB += g.FreeMiB
		if g.UtilizationPercent != nil {
			s.utilization += uint64(*g.UtilizationPercent)
		}
		for b := a + 1; b < len(members); b++ {
			level := links.level(g.Index, eligible[members[b]].Index)
			rank := linkRank(level)
			if !isNVLink(rank) {
				s.allNVLink = false
			}
			if rank < s.bottleneck {
				s.bottleneck, s.bottleneckLevel = rank, level
			}
		}
	}
	return s
}

// better says whether set a ranks above set b.
func better(req Request, a, b candidateSet, eligible []GPU) bool {
	if a.allNVLink != b.allNVLink {
		return a.allNVLink
	}
	if a.bottleneck != b.bottleneck {
		return a.bottleneck > b.bottleneck
	}
	switch req.Prefer {
	case PreferPacked:
		if a.freeMiB != b.freeMiB {
			return a.freeMiB < b.freeMiB
		}
		if a.utilization != b.utilization {
			return a.utilization > b.utilization
		}
	default:
		if a.utilization != b.utilization {
			return a.utilization < b.utilization
		}
		if a.freeMiB != b.freeMiB {
			return a.freeMiB > b.freeMiB
		}
	}
	for i := range a.members {
		ia, ib := eligible[a.members[i]].Index, eligible[b.members[i]].Index
		if ia != ib {
			return ia < ib
		}
	}
	return false
}

// preferGPU says whether GPU a comes before b by preference alone.
func preferGPU(req Request, a, b GPU) bool {
	ua, ub := utilization(a), utilization(b)
	if req.Prefer == PreferPacked {
		if a.FreeMiB != b.FreeMiB {
			return a.FreeMiB < b.FreeMiB
		}
		return ua > ub
	}
	if ua != ub {
		return ua < ub
	}
	if a.FreeMiB != b.FreeMiB {
		return a.FreeMiB > b.FreeMiB
	}
	return a.Index < b.Index
}

func utilization(g GPU) uint32 {
	if g.UtilizationPercent == nil {
		return 0
	}
	return *g.UtilizationPercent
}

// binomial is n choose k, saturating past maxSetsCompared.
func binomial(n, k int) int {
	if k < 0 || k > n {
		return 0
	}
	result := 1
	for i := 1; i <= k; i++ {
		result = result * (n - k + i) / i
		if result > maxSetsCompared {
			return maxSetsCompared + 1
		}
	}
	return result
}
