package nvmltest

import (
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
)

// This file owns counting the NVML calls made through the double, for
// benchmarks and for tests of how many calls a reading costs. NewDGXA100
// wraps every func field of the mocks (the library, each GPU, each event
// set it creates) with a counter; a func a test puts in a field afterwards
// is not counted. Calls on a GPU are counted for the whole fleet and for
// that GPU alone (GPUCalls).

// CallCounts is how many NVML calls went through the double.
type CallCounts struct {
	Total uint64
	// ByMethod counts by go-nvml method name: library calls as
	// "DeviceGetCount", GPU calls as "GetUUID" (all GPUs together), event
	// set calls as "EventSet.Wait". Methods never called are absent.
	ByMethod map[string]uint64
}

// Calls returns the NVML calls made through the double so far.
func (f *Fleet) Calls() CallCounts {
	return f.calls.counts()
}

// GPUCalls returns the NVML calls made so far on GPU i's handle, by
// method name as in Calls.
func (f *Fleet) GPUCalls(i int) CallCounts {
	return f.gpuCalls[i].counts()
}

// callCounter counts calls, in total and per method.
type callCounter struct {
	total atomic.Uint64

	mu       sync.Mutex
	byMethod map[string]*atomic.Uint64
}

func (f *Fleet) countCalls() {
	f.calls.wrap(&f.Server.Interface, "", nil)
	f.calls.wrap(&f.Server.ExtendedInterface, "", nil)
	for i := range f.Server.Devices {
		f.calls.wrap(&f.Device(i).Device, "", &f.gpuCalls[i])
	}
}

// wrap replaces every non-nil func field of the mock struct mockStruct
// points to with one that counts the call as prefix+name, name being the
// field's name without "Func", in c and, when it is not nil, in also.
func (c *callCounter) wrap(mockStruct any, prefix string, also *callCounter) {
	v := reflect.ValueOf(mockStruct).Elem()
	t := v.Type()
	for i := 0; i < v.NumField(); i++ {
		field := v.Field(i)
		if field.Kind() != reflect.Func || field.IsNil() || !field.CanSet() {
			continue
		}
		method := prefix + strings.TrimSuffix(t.Field(i).Name, "Func")
		n := c.counter(method)
		var alsoN *atomic.Uint64
		if also != nil {
			alsoN = also.counter(method)
		}
		original := reflect.ValueOf(field.Interface())
		field.Set(reflect.MakeFunc(field.Type(), func(args []reflect.Value) []reflect.Value {
			n.Add(1)
			c.total.Add(1)
			if alsoN != nil {
				alsoN.Add(1)
				also.total.Add(1)
			}
			return original.Call(args)
		}))
	}
}

func (c *callCounter) counter(method string) *atomic.Uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byMethod == nil {
		c.byMethod = map[string]*atomic.Uint64{}
	}
	n := c.byMethod[method]
	if n == nil {
		n = &atomic.Uint64{}
		c.byMethod[method] = n
	}
	return n
}

func (c *callCounter) counts() CallCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := CallCounts{Total: c.total.Load(), ByMethod: map[string]uint64{}}
	for method, n := range c.byMethod {
		if v := n.Load(); v > 0 {
			out.ByMethod[method] = v
		}
	}
	return out
}
