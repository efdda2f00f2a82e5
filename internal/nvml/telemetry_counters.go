package nvml

import (
	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// This file owns the counters of a Sample that tell a GPU's health over
// time: ECC errors, retired pages, remapped rows, the time the clocks were
// held down (violation times) and NVLink errors. They are NVML's running
// totals; consumers take differences between samples.

func (r *telemetryReader) readECC() {
	counters := []struct {
		what    string
		kind    gonvml.MemoryErrorType
		counter gonvml.EccCounterType
		out     **uint64
	}{
		{"volatile corrected ECC errors", gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.VOLATILE_ECC, &r.out.ECC.CorrectedVolatile},
		{"volatile uncorrected ECC errors", gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC, &r.out.ECC.UncorrectedVolatile},
		{"aggregate corrected ECC errors", gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.AGGREGATE_ECC, &r.out.ECC.CorrectedAggregate},
		{"aggregate uncorrected ECC errors", gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.AGGREGATE_ECC, &r.out.ECC.UncorrectedAggregate},
	}
	for _, c := range counters {
		if r.stopped {
			return
		}
		*c.out = read(r, c.what, func() (uint64, gonvml.Return) { return r.dev.GetTotalEccErrors(c.kind, c.counter) })
	}
}

// readRetirement reads page retirement (before Ampere: NVML answers
// ERROR_NOT_SUPPORTED on Ampere and later) and row remapping (Ampere and
// later).
func (r *telemetryReader) readRetirement() {
	e := &r.out.ECC
	retired := []struct {
		what  string
		cause gonvml.PageRetirementCause
		out   **uint64
	}{
		{"pages retired for single-bit errors", gonvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &e.RetiredSingleBit},
		{"pages retired for double-bit errors", gonvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &e.RetiredDoubleBit},
	}
	for _, p := range retired {
		if r.stopped {
			return
		}
		if pages := read(r, p.what, func() ([]uint64, gonvml.Return) { return r.dev.GetRetiredPages(p.cause) }); pages != nil {
			n := uint64(len(*pages))
			*p.out = &n
		}
	}
	if r.stopped {
		return
	}
	if state := read(r, "retired pages pending", r.dev.GetRetiredPagesPendingStatus); state != nil {
		pending := *state == gonvml.FEATURE_ENABLED
		e.RetiredPending = &pending
	}
	if r.stopped {
		return
	}
	type remap struct {
		correctable, uncorrectable int
		pending, failure           bool
	}
	if rows := read(r, "remapped rows", func() (remap, gonvml.Return) {
		corr, unc, pending, failure, ret := r.dev.GetRemappedRows()
		return remap{corr, unc, pending, failure}, ret
	}); rows != nil {
		corr, unc := uint64(rows.correctable), uint64(rows.uncorrectable)
		e.RemappedCorrectable, e.RemappedUncorrectable = &corr, &unc
		e.RemapPending, e.RemapFailure = &rows.pending, &rows.failure
	}
}

// readViolations reads nvmlDeviceGetViolationStatus per policy: the time,
// in ns, the policy held the clocks down since the driver was loaded.
func (r *telemetryReader) readViolations() {
	v := &r.out.Violations
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
		if r.stopped {
			return
		}
		if t := read(r, p.what, func() (gonvml.ViolationTime, gonvml.Return) { return r.dev.GetViolationStatus(p.policy) }); t != nil {
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
func (r *telemetryReader) readNVLinkErrors() {
	st := r.state
	if st.nvLinks < 0 {
		st.nvLinks = r.countNVLinks()
		if r.stopped {
			st.nvLinks = -1
			return
		}
	}
	if st.nvLinks == 0 {
		return
	}
	sums := &NVLinkErrorSums{}
	for link := 0; link < st.nvLinks; link++ {
		state, ret := call1(func() (gonvml.EnableState, gonvml.Return) { return r.dev.GetNvLinkState(link) })
		if deviceFatal(ret) {
			r.stop("NVLink state", ret)
			return
		}
		if ret != gonvml.SUCCESS || state != gonvml.FEATURE_ENABLED {
			continue
		}
		for _, c := range nvLinkCounters {
			n, ret := ask(r, c.what, func() (uint64, gonvml.Return) { return r.dev.GetNvLinkErrorCounter(link, c.counter) })
			if r.stopped {
				return
			}
			if ret == gonvml.SUCCESS {
				*c.sum(sums) += n
			}
		}
	}
	r.out.NVLinkErrors = sums
}

// countNVLinks says how many link indices the GPU answers for; 0 when it
// has no NVLink.
func (r *telemetryReader) countNVLinks() int {
	answered := false
	for link := 0; link < gonvml.NVLINK_MAX_LINKS; link++ {
		_, ret := call1(func() (gonvml.EnableState, gonvml.Return) { return r.dev.GetNvLinkState(link) })
		switch {
		case deviceFatal(ret):
			r.stop("NVLink state", ret)
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
