package proxmox

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMappingFormSendsEachEntryAsAMapValue(t *testing.T) {
	m := PCIMapping{ID: "l40s-pool", Description: "every L40S", Mdev: true, Entries: []PCIMappingEntry{
		{Node: "pve-l40s-b", Path: "0000:41:00.0", ID: "10de:26b9", SubsystemID: "10de:1851", IOMMUGroup: 50},
		{Node: "pve-l40s-b", Path: "0000:61:00.0", ID: "10de:26b9", SubsystemID: "10de:1851", IOMMUGroup: 51},
	}, Digest: "ignored"}
	form := mappingForm(m)
	require.Equal(t, url.Values{
		"description": {"every L40S"}, "mdev": {"1"},
		"map": {
			"node=pve-l40s-b,path=0000:41:00.0,id=10de:26b9,subsystem-id=10de:1851,iommugroup=50",
			"node=pve-l40s-b,path=0000:61:00.0,id=10de:26b9,subsystem-id=10de:1851,iommugroup=51",
		},
	}, form)
	require.Contains(t, form.Encode(), "map=node%3Dpve-l40s-b%2Cpath%3D0000%3A41%3A00.0", "the array as repeated form values")
}

func TestA403IsAPermissionError(t *testing.T) {
	answer := func(status string, body string) error {
		code, err := strconv.Atoi(status[:3])
		require.NoError(t, err)
		resp := &http.Response{StatusCode: code, Status: status, Body: io.NopCloser(strings.NewReader(body))}
		return (&Client{}).answerError(resp, []byte(body))
	}
	// pve-http-server: the message in the reason phrase, no body message.
	err := answer("403 Permission check failed (/mapping/pci, Mapping.Modify)", `{"data":null}`)
	var pe *PermissionError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "/mapping/pci", pe.Path)
	require.Equal(t, []string{"Mapping.Modify"}, pe.Privileges)
	var ae *APIError
	require.ErrorAs(t, err, &ae, "still an *APIError")
	require.Equal(t, "403", ae.Status)
	require.EqualError(t, err, "403 Permission check failed (/mapping/pci, Mapping.Modify)")

	// check_any joins the privileges with '|'.
	err = answer("403 Forbidden", `{"message":"Permission check failed (/vms/100, Sys.Audit|Sys.Modify)\n"}`)
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "/vms/100", pe.Path)
	require.Equal(t, []string{"Sys.Audit", "Sys.Modify"}, pe.Privileges)

	// No detail: raise_perm_exc() alone.
	err = answer("403 Permission check failed", "")
	require.ErrorAs(t, err, &pe)
	require.Empty(t, pe.Path)
	require.Nil(t, pe.Privileges)

	err = answer("500 mapping 'gone' not found", "")
	require.False(t, errors.As(err, &pe))
	require.True(t, isMappingNotFound(err, "gone"))
	require.False(t, isMappingNotFound(err, "go"))
}

// qtree is "info qtree" of a VM with an L40S passed whole (hostpci0), an
// A6000 as a multifunction device (hostpci1.0, hostpci1.1: the audio
// function listed first), and a vGPU (hostpci2), in QEMU's qdev_print
// format (system/qdev-monitor.c).
const qtree = `bus: main-system-bus
  type System
  dev: q35-pcihost, id ""
    MCFG = 2952790016 (0xb0000000)
    bus: pcie.0
      type PCIE
      dev: pcie-root-port, id "ich9-pcie-port-1"
        chassis = 1 (0x1)
        bus: ich9-pcie-port-1
          type PCIE
          dev: vfio-pci, id "hostpci0"
            host = "0000:41:00.0"
            sysfsdev = <null>
            x-pre-copy-dirty-page-tracking = "on"
            addr = 00.0
            romfile = <null>
            class 3D controller, addr 01:00.0, pci id 10de:26b9 (sub 10de:1851)
      dev: pcie-root-port, id "ich9-pcie-port-2"
        bus: ich9-pcie-port-2
          type PCIE
          dev: vfio-pci, id "hostpci1.1"
            host = "0000:81:00.1"
            addr = 00.1
          dev: vfio-pci, id "hostpci1.0"
            host = "0000:81:00.0"
            addr = 00.0
            class VGA controller, addr 02:00.0, pci id 10de:2230 (sub 10de:1459)
      dev: vfio-pci, id "hostpci2"
        host = "ffff:ff:ff.f"
        sysfsdev = "/sys/bus/mdev/devices/00000002-0000-0000-0000-000000000100"
      dev: virtio-net-pci, id "net0"
        host_mtu = 0 (0x0)
      dev: vfio-pci, id "not-ours"
        host = "0000:09:00.0"
`

func TestParseQtreeHostDevices(t *testing.T) {
	require.Equal(t, map[int]string{0: "0000:41:00.0", 1: "0000:81:00.0"}, ParseQtreeHostDevices(qtree))
	require.Equal(t, map[int]string{0: "0000:41:00.0", 1: "0000:81:00.0"}, ParseQtreeHostDevices(strings.ReplaceAll(qtree, "\n", "\r\n")),
		"the monitor's line ends")
	require.Empty(t, ParseQtreeHostDevices(""))
	require.Empty(t, ParseQtreeHostDevices("ERROR: VM 100 not running"))
}
