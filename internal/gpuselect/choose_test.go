package gpuselect

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
)

func pct(v uint32) *uint32 { return &v }

// pcieBox is eight idle 40 GiB GPUs on PCIe: pairs behind one switch (PXB),
// four per socket (NODE), SYS across sockets; links adds NVLink bridges.
func pcieBox(links map[[2]int]string) Machine {
	var m Machine
	for i := 0; i < 8; i++ {
		m.GPUs = append(m.GPUs, GPU{
			Index: i, UUID: fmt.Sprintf("GPU-%d", i), Name: "NVIDIA A100-PCIE-40GB",
			TotalMiB: 40960, FreeMiB: 40000, UtilizationPercent: pct(0),
		})
	}
	for a := 0; a < 8; a++ {
		for b := a + 1; b < 8; b++ {
			level := "SYS"
			switch {
			case links[[2]int{a, b}] != "":
				level = links[[2]int{a, b}]
			case a/2 == b/2:
				level = "PXB"
			case a/4 == b/4:
				level = "NODE"
			}
			m.Links = append(m.Links, nvml.Link{GPU1: a, GPU2: b, Level: level})
		}
	}
	return m
}

func indices(c Choice) []int {
	var out []int
	for _, g := range c.GPUs {
		out = append(out, g.Index)
	}
	return out
}

func TestChoose(t *testing.T) {
	idle := Request{Count: 1, Prefer: PreferIdle, BusyUtilization: 10}
	with := func(r Request, change func(*Request)) Request { change(&r); return r }
	for _, tc := range []struct {
		description string
		machine     func() Machine
		req         Request
		want        []int
		wantLink    string
	}{
		{
			description: "one GPU on an idle machine is the lowest index",
			machine:     func() Machine { return pcieBox(nil) },
			req:         idle,
			want:        []int{0},
		},
		{
			description: "two GPUs without NVLink take a pair behind one PCIe switch",
			machine:     func() Machine { return pcieBox(nil) },
			req:         with(idle, func(r *Request) { r.Count = 2 }),
			want:        []int{0, 1},
			wantLink:    "PXB",
		},
		{
			description: "an NVLink-bridged pair wins over a PCIe pair even when its GPUs are busier",
			machine: func() Machine {
				m := pcieBox(map[[2]int]string{{5, 6}: "NV4"})
				m.GPUs[5].UtilizationPercent, m.GPUs[6].UtilizationPercent = pct(60), pct(60)
				return m
			},
			req:      with(idle, func(r *Request) { r.Count = 2 }),
			want:     []int{5, 6},
			wantLink: "NV4",
		},
		{
			description: "more NVLinks win over fewer",
			machine:     func() Machine { return pcieBox(map[[2]int]string{{0, 1}: "NV2", {6, 7}: "NV12"}) },
			req:         with(idle, func(r *Request) { r.Count = 2 }),
			want:        []int{6, 7},
			wantLink:    "NV12",
		},
		{
			description: "four GPUs: the set whose slowest pair is best linked (one socket, NODE) beats one that crosses sockets",
			machine: func() Machine {
				m := pcieBox(nil)
				m.GPUs[1].FreeMiB = 100 // rules out 0-3 as a whole socket
				return m
			},
			req:      with(idle, func(r *Request) { r.Count = 4; r.MinFreeMiB = 1024 }),
			want:     []int{4, 5, 6, 7},
			wantLink: "NODE",
		},
		{
			description: "idle prefers the least utilized GPU",
			machine: func() Machine {
				m := pcieBox(nil)
				for i := range m.GPUs {
					m.GPUs[i].UtilizationPercent = pct(uint32(80 - i*10))
				}
				return m
			},
			req:  idle,
			want: []int{7},
		},
		{
			description: "idle breaks a utilization tie by the most free memory",
			machine: func() Machine {
				m := pcieBox(nil)
				m.GPUs[3].FreeMiB = 40900
				return m
			},
			req:  idle,
			want: []int{3},
		},
		{
			description: "packed takes the GPU with the least free memory that still fits",
			machine: func() Machine {
				m := pcieBox(nil)
				m.GPUs[2].FreeMiB, m.GPUs[2].Processes = 22000, 1
				m.GPUs[4].FreeMiB, m.GPUs[4].Processes = 10000, 1 // too little
				return m
			},
			req:  with(idle, func(r *Request) { r.Prefer = PreferPacked; r.MinFreeMiB = 20480 }),
			want: []int{2},
		},
		{
			description: "exclude-busy skips GPUs with processes and GPUs at the utilization limit",
			machine: func() Machine {
				m := pcieBox(nil)
				m.GPUs[0].Processes = 1
				m.GPUs[1].UtilizationPercent = pct(10)
				return m
			},
			req:  with(idle, func(r *Request) { r.ExcludeBusy = true }),
			want: []int{2},
		},
		{
			description: "a GPU under the utilization limit is not busy",
			machine: func() Machine {
				m := pcieBox(nil)
				m.GPUs[0].UtilizationPercent = pct(9)
				for i := 1; i < 8; i++ {
					m.GPUs[i].UtilizationPercent = pct(50)
				}
				return m
			},
			req:  with(idle, func(r *Request) { r.ExcludeBusy = true }),
			want: []int{0},
		},
		{
			description: "product matches the name case-insensitively as a substring",
			machine: func() Machine {
				m := pcieBox(nil)
				m.GPUs[6].Name = "NVIDIA H100 80GB HBM3"
				return m
			},
			req:  with(idle, func(r *Request) { r.Product = "h100" }),
			want: []int{6},
		},
		{
			description: "MIG-enabled and lost GPUs are never chosen",
			machine: func() Machine {
				m := pcieBox(nil)
				m.GPUs[0].MIG = true
				m.GPUs[1].Unusable = "fallen off the bus"
				return m
			},
			req:  idle,
			want: []int{2},
		},
		{
			description: "an unknown utilization counts as idle, not as busy",
			machine: func() Machine {
				m := pcieBox(nil)
				m.GPUs[0].UtilizationPercent = nil
				return m
			},
			req:  with(idle, func(r *Request) { r.ExcludeBusy = true }),
			want: []int{0},
		},
		{
			description: "all eight GPUs",
			machine:     func() Machine { return pcieBox(nil) },
			req:         with(idle, func(r *Request) { r.Count = 8 }),
			want:        []int{0, 1, 2, 3, 4, 5, 6, 7},
			wantLink:    "SYS",
		},
	} {
		t.Run(tc.description, func(t *testing.T) {
			got, err := Choose(tc.req, tc.machine())
			if err != nil {
				t.Fatalf("Choose: %v", err)
			}
			if !reflect.DeepEqual(indices(got), tc.want) {
				t.Fatalf("chose GPUs %v, want %v", indices(got), tc.want)
			}
			if got.Link != tc.wantLink {
				t.Errorf("link %q, want %q", got.Link, tc.wantLink)
			}
		})
	}
}

func TestChooseFailsWithEveryReason(t *testing.T) {
	m := pcieBox(nil)
	m.GPUs[0].FreeMiB = 3 * 1024
	m.GPUs[1].Processes = 2
	m.GPUs[2].Name = "Tesla T4"
	m.GPUs[3].MIG = true
	m.GPUs[4].Unusable = "fallen off the bus (NVML: GPU is lost); reset it or reboot"
	m.GPUs[5].UtilizationPercent = pct(87)
	m.GPUs = m.GPUs[:7] // GPU 6 alone qualifies
	req := Request{Count: 2, MinFreeMiB: 20 * 1024, Product: "A100", Prefer: PreferIdle, ExcludeBusy: true, BusyUtilization: 10}
	_, err := Choose(req, m)
	var noChoice *NoChoiceError
	if err == nil {
		t.Fatal("Choose succeeded; want a NoChoiceError")
	}
	if !asNoChoice(err, &noChoice) {
		t.Fatalf("error %T, want *NoChoiceError", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"2 GPUs asked for (count 2, at least 20.0 GiB free, product \"A100\", not busy (no process, under 10% utilized)), but only 1 of the 7 qualify (GPU 6)",
		"GPU 0 (GPU-0): 3.0 GiB free of 40.0 GiB, needs 20.0 GiB",
		"GPU 1 (GPU-1): busy: 2 process(es) running on it",
		`GPU 2 (GPU-2): Tesla T4 is not a "A100"`,
		"GPU 3 (GPU-3): MIG mode is on",
		"GPU 4 (GPU-4): fallen off the bus",
		"GPU 5 (GPU-5): busy: 87% utilized (the limit is under 10%)",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "GPU 6 (GPU-6):") {
		t.Errorf("the qualifying GPU is listed as rejected:\n%s", msg)
	}
}

func TestChooseOnAMachineWithoutGPUs(t *testing.T) {
	_, err := Choose(Request{Count: 1, Prefer: PreferIdle}, Machine{})
	if err == nil || !strings.Contains(err.Error(), "no GPU on this machine") {
		t.Fatalf("Choose on no GPUs = %v", err)
	}
}

// TestChooseIsExhaustiveAgainstGreedy checks the search against every
// subset on machines where the greedy order and the topology disagree.
func TestChooseIsExhaustiveAgainstGreedy(t *testing.T) {
	m := pcieBox(map[[2]int]string{{2, 5}: "NV2", {2, 7}: "NV2", {5, 7}: "NV2"})
	for i := range m.GPUs {
		m.GPUs[i].UtilizationPercent = pct(uint32(i * 3))
	}
	got, err := Choose(Request{Count: 3, Prefer: PreferIdle, BusyUtilization: 10}, m)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(indices(got), []int{2, 5, 7}) || got.Link != "NV2" {
		t.Fatalf("chose %v over %q, want the NVLink triangle [2 5 7] over NV2", indices(got), got.Link)
	}
}

func TestChooseFallsBackToGreedyOnHugeMachines(t *testing.T) {
	var m Machine
	for i := 0; i < 40; i++ {
		m.GPUs = append(m.GPUs, GPU{Index: i, UUID: fmt.Sprintf("GPU-%d", i), Name: "GPU", FreeMiB: 1000, TotalMiB: 1000, UtilizationPercent: pct(uint32(40 - i))})
	}
	got, err := Choose(Request{Count: 20, Prefer: PreferIdle, BusyUtilization: 10}, m)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int, 0, 20)
	for i := 20; i < 40; i++ {
		want = append(want, i)
	}
	if !reflect.DeepEqual(indices(got), want) {
		t.Fatalf("chose %v, want the 20 least utilized %v", indices(got), want)
	}
}

func asNoChoice(err error, target **NoChoiceError) bool {
	nc, ok := err.(*NoChoiceError)
	if ok {
		*target = nc
	}
	return ok
}
