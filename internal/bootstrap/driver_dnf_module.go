package bootstrap

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// This file reads dnf's record of the nvidia-driver module's stream, the
// lock of the driver branch on RHEL 8/9 and Amazon Linux 2023
// (driver_dnf.go).

// dnfModuleStatePath is where dnf keeps the nvidia-driver module's state:
// dnf writes /etc/dnf/modules.d/<module>.module when a stream is enabled,
// switched, reset or disabled (dnf-module(8)).
const dnfModuleStatePath = "/etc/dnf/modules.d/nvidia-driver.module"

// dnfModuleStream is the nvidia-driver module's state in dnf's modules.d.
type dnfModuleStream struct {
	Stream string // "580-open"
	State  string // "enabled", "disabled", ""
}

func (s dnfModuleStream) enabled() bool { return s.State == "enabled" }

// readDNFModuleStream reads /etc/dnf/modules.d/nvidia-driver.module, the INI
// file dnf writes when a stream is enabled, reset or switched.
func readDNFModuleStream(h *Host) (dnfModuleStream, error) {
	data, exists, err := h.ReadFile(dnfModuleStatePath)
	if err != nil {
		return dnfModuleStream{}, fmt.Errorf("reading %s: %w", dnfModuleStatePath, err)
	}
	var s dnfModuleStream
	if !exists {
		return s, nil
	}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for scanner.Scan() {
		line++
		text := strings.TrimSpace(scanner.Text())
		if text == "" || strings.HasPrefix(text, "#") || strings.HasPrefix(text, ";") || strings.HasPrefix(text, "[") {
			continue
		}
		key, value, found := strings.Cut(text, "=")
		if !found {
			return dnfModuleStream{}, &ParseError{Path: dnfModuleStatePath, Line: line, Err: fmt.Errorf("%q is not key=value", text)}
		}
		switch strings.TrimSpace(key) {
		case "stream":
			s.Stream = strings.TrimSpace(value)
		case "state":
			s.State = strings.TrimSpace(value)
		}
	}
	return s, scanner.Err()
}
