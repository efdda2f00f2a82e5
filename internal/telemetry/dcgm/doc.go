// Package dcgm serves GPU telemetry read through NVML as dcgm-exporter
// does: Prometheus text exposition (format 0.0.4) with dcgm-exporter's metric
// names, types and labels, so dashboards and alerts written for
// dcgm-exporter (NVIDIA's Grafana dashboard 12239 among them) work on a
// machine that has the driver but not DCGM. `gpu-bootstrap metrics` is its
// command.
//
// What it emits. Only names from dcgm-exporter's default counters
// (etc/default-counters.csv, commented lines included) of release
// 4.5.3-4.8.2, all but DCGM_FI_DEV_FB_RESERVED also of 3.3.6-3.4.2
// (testdata/dcgm-exporter-counters-4.8.txt and dcgm-exporter-counters.txt
// hold the lists; a test fails on a name the 4.8 list lacks, on a type
// either list gives otherwise, and on a name in either that is neither
// filled nor explained in fields.go's unfilled), in DCGM's units:
//
//   - DCGM_FI_DEV_SM_CLOCK, DCGM_FI_DEV_MEM_CLOCK (gauge, MHz)
//   - DCGM_FI_DEV_GPU_TEMP, DCGM_FI_DEV_MEMORY_TEMP (gauge, °C)
//   - DCGM_FI_DEV_POWER_USAGE (gauge, W)
//   - DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (counter, mJ since the driver loaded)
//   - DCGM_FI_DEV_PCIE_REPLAY_COUNTER (counter)
//   - DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_MEM_COPY_UTIL, DCGM_FI_DEV_ENC_UTIL,
//     DCGM_FI_DEV_DEC_UTIL (gauge, %)
//   - DCGM_FI_DEV_XID_ERRORS (gauge): the last XID NVML reported for the GPU
//     since the exporter started, with err_code and err_msg labels (err_msg
//     is internal/telemetry's XIDMeaning, not dcgm-exporter's wording);
//     absent until the first XID, as DCGM leaves the field blank until then
//   - DCGM_FI_DEV_POWER_VIOLATION, _THERMAL_, _SYNC_BOOST_, _BOARD_LIMIT_,
//     _LOW_UTIL_ and _RELIABILITY_VIOLATION (counter, ns: DCGM stores NVML's
//     nanoseconds unconverted, "Power Violation time in ns" in dcgm_fields.h
//     since DCGM 4.1; older help texts said us)
//   - DCGM_FI_DEV_FB_FREE, DCGM_FI_DEV_FB_USED (gauge, MiB)
//   - DCGM_FI_DEV_FB_RESERVED (gauge, MiB; 4.x): what the driver keeps for
//     itself, nvmlMemory_v2_t.reserved. Only drivers with
//     nvmlDeviceGetMemoryInfo_v2 give it; on one without, package nvml reads
//     version 1, whose used is the "Sum of Reserved and Allocated device
//     memory" (NVML API reference), so that GPU has no FB_RESERVED series
//     and its FB_USED counts the reserve
//   - DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, _DBE_VOL_, _SBE_AGG_, _DBE_AGG_TOTAL
//     (counter, errors; SBE = corrected, DBE = uncorrected)
//   - DCGM_FI_DEV_RETIRED_SBE, DCGM_FI_DEV_RETIRED_DBE (counter, pages),
//     DCGM_FI_DEV_RETIRED_PENDING (counter typed, 0 or 1, as DCGM fills it)
//   - DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, _CRC_DATA_, _REPLAY_,
//     _RECOVERY_ERROR_COUNT_TOTAL (counter, summed over the GPU's links)
//   - DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS,
//     DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS (counter, rows),
//     DCGM_FI_DEV_ROW_REMAP_FAILURE (gauge, 0 or 1)
//
// A reading NVML does not give for a GPU (not supported, no permission) has
// no series: never a zero standing in for "unknown".
//
// Labels, in dcgm-exporter's order: gpu (NVML index), UUID, pci_bus_id (NVML's
// spelling, "00000000:07:00.0"), device ("nvidia<index>"), modelName, for a
// MIG instance GPU_I_PROFILE and GPU_I_ID, the host's label (value
// Options.Hostname: the command gives NODE_NAME, else the host's name, as
// dcgm-exporter does; name Options.HostnameLabel: hostname by default, as
// dcgm-exporter from 4.6.0-4.8.3 on, Hostname as 3.x up to 4.5.3-4.8.2, or
// both; hostname.go), DCGM_FI_DRIVER_VERSION (dcgm-exporter's default
// counters make the driver version a label), and on a Kubernetes node
// container, namespace and pod for the devices a container holds (package
// podresources).
//
// MIG: the GPU's series stay on the GPU (temperature, power, clocks, ECC are
// the GPU's, whatever its instances); each GPU instance gets a
// DCGM_FI_DEV_FB_USED series with GPU_I_PROFILE and GPU_I_ID, the one reading
// NVML gives per instance. NVML gives no per-instance utilization, so there
// is none. DCGM_FI_DEV_FB_RESERVED is the GPU's only: an instance's memory
// is read with version 1, which has no reserve, and dcgm-exporter's source
// says nothing of the field per instance (it is a counters row; DCGM fills
// it). (dcgm-exporter's default, --devices f, watches a MIG GPU's
// instances instead of the GPU; here the GPU keeps its series.)
//
// A GPU NVML reports lost (fallen off the bus) loses its series, as DCGM
// blanks a lost GPU's fields; its DCGM_FI_DEV_XID_ERRORS stays, holding the
// last XID (79, usually), as DCGM keeps the last XID.
//
// What it does not reproduce. Names in the list it cannot fill:
//
//   - DCGM_FI_DEV_PCIE_TX_THROUGHPUT, DCGM_FI_DEV_PCIE_RX_THROUGHPUT: NVML's
//     PCIe throughput is a KB/s rate over a 20 ms window, not a total;
//     dcgm-exporter typed that rate "counter" until it dropped the names
//     (release 3.3.7-3.5.0) for the DCP fields DCGM_FI_PROF_PCIE_TX/RX_BYTES.
//     Summing 20 ms glimpses into a total would invent traffic nobody measured.
//   - DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL: the sample carries NVLink error
//     counters, not NVLink traffic counters.
//   - DCGM_FI_DEV_NVLINK_BANDWIDTH_L0 (4.x, commented): the same.
//   - DCGM_FI_DEV_VGPU_LICENSE_STATUS: vGPU guest licensing is not sampled.
//   - The DCGM_FI_PROF_* profiling (DCP) fields of the 4.x lists
//     (GR_ENGINE_ACTIVE, PIPE_TENSOR_ACTIVE, DRAM_ACTIVE, PCIE_TX/RX_BYTES
//     active; SM_ACTIVE, SM_OCCUPANCY, PIPE_FP64/FP32/FP16_ACTIVE commented),
//     which need DCGM's profiling module and hardware counters NVML does not
//     expose (the dashboard's "Tensor Core Utilization" panel stays empty).
//
// And never emitted: dcgm-exporter's own DCGM_EXP_* metrics (commented in
// both lists); no Go runtime or process metrics either: the endpoint is
// DCGM names only.
//
// What changed in dcgm-exporter's defaults from 3.3.6-3.4.2 to 4.5.3-4.8.2
// (etc/default-counters.csv at each tag of NVIDIA/dcgm-exporter) and since
// (its release notes), and what this package did about it:
//
//   - 3.3.7-3.5.0 dropped DCGM_FI_DEV_PCIE_TX/RX_THROUGHPUT for
//     DCGM_FI_PROF_PCIE_TX/RX_BYTES ("Update default PCIe metrics names",
//     #357); 4.0.0-4.0.1 commented those out as NVML counters and made them
//     active DCP gauges (bytes per second), beside GR_ENGINE_ACTIVE,
//     PIPE_TENSOR_ACTIVE and DRAM_ACTIVE (active) and five more commented,
//     and added DCGM_FI_DEV_NVLINK_BANDWIDTH_L0 (commented). Not filled.
//   - 4.3.1-4.4.0 added DCGM_FI_DEV_FB_RESERVED (active, "Framebuffer
//     memory reserved (in MiB)."). Filled where the driver has version 2
//     memory info (above).
//   - 4.5.1-4.8.0 corrected the violation timers' help from "in us" to "in
//     ns" (#589): this package said ns already.
//   - The DCGM_EXP_* rows became counters and gained GPU_HEALTH_STATUS and
//     P2P_STATUS, all commented: not DCGM fields, not emitted.
//   - Every name this package emits is in the 4.8 list, and every one but
//     DCGM_FI_DEV_FB_RESERVED in the 3.x list, with the same type in both.
//   - 4.6.0-4.8.3 renamed the Hostname label hostname (#655), with no option
//     to keep the old name (only --no-hostname, which drops it): the default
//     here follows, HostnameLabel keeps Hostname or writes both.
//   - 4.9.0 (release notes; its counters file is not in the sources this was
//     written from) renames 23 default and profiling fields to DCGM 4.7's
//     names, eleven with new units (clocks in hertz, energy in joules,
//     utilization as a 0 to 1 ratio, memory in bytes), renames the
//     DCGM_FI_DRIVER_VERSION label DCGM_FI_SYSTEM_DRIVER_VERSION, and
//     collects DCGM_FI_DEV_FB_CAPACITY_BYTES by default. None of that is
//     served: the names here are those dashboards written for dcgm-exporter
//     3.x to 4.8.x query.
//
// Scrapes are cheap and never run NVML at once: Exporter keeps the last pass
// (one Sample and, on a Kubernetes node, one PodResources List) for MaxAge,
// and scrapers that arrive while a pass runs wait for it and share it.
package dcgm
