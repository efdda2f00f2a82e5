// Package telemetry turns NVML samples into what a person watching GPUs
// wants to read: nvidia-smi-compatible CSV, a table, events derived from
// successive samples (throttling starting and stopping, a GPU lost), the
// usual meaning of an XID, and a summary with plain-language findings.
//
// It is pure logic over internal/nvml's telemetry types: it never calls
// NVML, reads a clock or writes to a terminal. The command that samples
// (gpu-bootstrap monitor) owns the loop, the time and the output streams;
// tests hand it TelemetrySample values they build.
package telemetry
