package nvml

import gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

// This file owns the counters of a Sample that tell a GPU's health over
// time: ECC errors, retired pages, remapped rows, the time the clocks were
// held down (violation times) and NVLink errors. They are NVML's running
// totals; consumers take differences between samples.

func (f *sampleFields) readECC() {
	e := &f.out.ECC
	e.CorrectedVolatile = f.eccErrors(gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.VOLATILE_ECC)
	e.UncorrectedVolatile = f.eccErrors(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC)
	e.CorrectedAggregate = f.eccErrors(gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.AGGREGATE_ECC)
	e.UncorrectedAggregate = f.eccErrors(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.AGGREGATE_ECC)
}

// readRetirement reads page retirement (before Ampere: NVML answers
// ERROR_NOT_SUPPORTED on Ampere and later) and row remapping (Ampere and
// later).
func (f *sampleFields) readRetirement() {
	e := &f.out.ECC
	retired := []struct {
		what  string
		cause gonvml.PageRetirementCause
		out   **uint64
	}{
		{"pages retired for single-bit errors", gonvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &e.RetiredSingleBit},
		{"pages retired for double-bit errors", gonvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &e.RetiredDoubleBit},
	}
	for _, p := range retired {
		if pages := read(f.gpuReader, p.what, func() ([]uint64, gonvml.Return) { return f.dev.GetRetiredPages(p.cause) }); pages != nil {
			n := uint64(len(*pages))
			*p.out = &n
		}
	}
	e.RetiredPending = f.retiredPagesPending()
	if rows := f.remappedRows(); rows != nil {
		corr, unc := uint64(rows.correctable), uint64(rows.uncorrectable)
		e.RemappedCorrectable, e.RemappedUncorrectable = &corr, &unc
		e.RemapPending, e.RemapFailure = &rows.pending, &rows.failure
	}
}

// readViolations reads nvmlDeviceGetViolationStatus per policy: the time,
// in ns, the policy held the clocks down since the driver was loaded.
func (f *sampleFields) readViolations() {
	v := &f.out.Violations
	policies := []struct {
		what   string
		policy gonvml.PerfPolicyType
		out    **uint64
	}{
		{"power violation time", gonvml.PERF_POLICY_POWER, &v.PowerNs},
		{"thermal violation time", gonvml.PERF_POLICY_THERMAL, &v.ThermalNs},
		{"sync boost violation time", gonvml.PERF_POLICY_SYNC_BOOST, &v.SyncBoostNs},
		{"board limit violation time", gonvml.PERF_POLICY_BOARD_LIMIT, &v.BoardLimitNs},
		{"low utilization violation time", gonvml.PERF_POLICY_LOW_UTILIZATION, &v.LowUtilNs},
		{"reliability violation time", gonvml.PERF_POLICY_RELIABILITY, &v.ReliabilityNs},
	}
	for _, p := range policies {
		if t := read(f.gpuReader, p.what, func() (gonvml.ViolationTime, gonvml.Return) { return f.dev.GetViolationStatus(p.policy) }); t != nil {
			*p.out = &t.ViolationTime
		}
	}
}

// nvLinkCounters are the NVLink error counters summed into NVLinkErrorSums.
var nvLinkCounters = []struct {
	what    string
	counter gonvml.NvLinkErrorCounter
	sum     func(*NVLinkErrorSums) *uint64
}{
	{"NVLink CRC flit errors", gonvml.NVLINK_ERROR_DL_CRC_FLIT, func(s *NVLinkErrorSums) *uint64 { return &s.CRCFlit }},
	{"NVLink CRC data errors", gonvml.NVLINK_ERROR_DL_CRC_DATA, func(s *NVLinkErrorSums) *uint64 { return &s.CRCData }},
	{"NVLink replays", gonvml.NVLINK_ERROR_DL_REPLAY, func(s *NVLinkErrorSums) *uint64 { return &s.Replay }},
	{"NVLink recoveries", gonvml.NVLINK_ERROR_DL_RECOVERY, func(s *NVLinkErrorSums) *uint64 { return &s.Recovery }},
}

// readNVLinkErrors sums the NVLink error counters over the GPU's active
// links. NVML answers ERROR_INVALID_ARGUMENT past a GPU's last link and
// ERROR_NOT_SUPPORTED on a GPU without NVLink; the first Sample counts the
// links, later ones ask only about those. NVLinkErrors stays nil on a GPU
// without NVLink, and is zero on one whose links are all down. A counter
// a link does not support adds nothing.
func (f *sampleFields) readNVLinkErrors() {
	st := f.state
	if st.nvLinks < 0 {
		st.nvLinks = f.countNVLinks()
		if f.stopped {
			st.nvLinks = -1
			return
		}
	}
	if st.nvLinks == 0 {
		return
	}
	sums := &NVLinkErrorSums{}
	for link := 0; link < st.nvLinks; link++ {
		state, ret := call(f.gpuReader, "NVLink state", func() (gonvml.EnableState, gonvml.Return) { return f.dev.GetNvLinkState(link) })
		if f.stopped {
			return
		}
		if ret != gonvml.SUCCESS || state != gonvml.FEATURE_ENABLED {
			continue
		}
		for _, c := range nvLinkCounters {
			n, ret := ask(f.gpuReader, c.what, func() (uint64, gonvml.Return) { return f.dev.GetNvLinkErrorCounter(link, c.counter) })
			if f.stopped {
				return
			}
			if ret == gonvml.SUCCESS {
				*c.sum(sums) += n
			}
		}
	}
	f.out.NVLinkErrors = sums
}

// countNVLinks says how many link indices the GPU answers for; 0 when it
// has no NVLink.
func (f *sampleFields) countNVLinks() int {
	answered := false
	for link := 0; link < gonvml.NVLINK_MAX_LINKS; link++ {
		_, ret := call(f.gpuReader, "NVLink state", func() (gonvml.EnableState, gonvml.Return) { return f.dev.GetNvLinkState(link) })
		switch {
		case f.stopped:
			return 0
		case ret == gonvml.ERROR_INVALID_ARGUMENT || ret == gonvml.ERROR_FUNCTION_NOT_FOUND:
			if !answered {
				return 0
			}
			return link
		case ret == gonvml.SUCCESS:
			answered = true
		}
	}
	if !answered {
		return 0
	}
	return gonvml.NVLINK_MAX_LINKS
}
