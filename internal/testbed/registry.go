package testbed

import "sync"

// live holds the attached testbeds of this process, so that an interrupt
// in Main stops all of them (StartForTest ones too), not just its own.
var live = struct {
	sync.Mutex
	testbeds map[*Testbed]struct{}
}{testbeds: map[*Testbed]struct{}{}}

func register(t *Testbed) {
	live.Lock()
	defer live.Unlock()
	live.testbeds[t] = struct{}{}
}

func unregister(t *Testbed) {
	live.Lock()
	defer live.Unlock()
	delete(live.testbeds, t)
}

// stopAll stops every attached testbed of this process, on the way out:
// errors have nowhere to go.
func stopAll() {
	live.Lock()
	testbeds := make([]*Testbed, 0, len(live.testbeds))
	for t := range live.testbeds {
		testbeds = append(testbeds, t)
	}
	live.Unlock()
	for _, t := range testbeds {
		_ = t.Stop()
	}
}
