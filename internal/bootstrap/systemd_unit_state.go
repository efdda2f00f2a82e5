package bootstrap

import (
	"os"
	"path"
)

// systemUnit is what a root has of one systemd system unit, read the way
// systemd loads it (systemd.unit(5)): the first directory of systemUnitDirs
// that has the name decides, so a link to /dev/null in /etc/systemd/system
// masks a unit file in /lib/systemd/system, and a file in /etc overrides
// one in /lib.
type systemUnit struct {
	path    string // the unit file in effect; "" when not installed or masked
	masked  string // the link to /dev/null in effect; "" when not masked
	enabled bool   // a multi-user.target.wants link for it in any of systemUnitDirs
}

// unitState reads unit ("name.service", "name.path") under the root.
func unitState(h *Host, unit string) systemUnit {
	var u systemUnit
	for _, dir := range systemUnitDirs {
		p := path.Join(dir, unit)
		if target, err := os.Readlink(h.linkPath(p)); err == nil && target == "/dev/null" {
			u.masked = p
			break
		}
		if h.Exists(p) {
			u.path = p
			break
		}
	}
	for _, dir := range systemUnitDirs {
		if h.Exists(path.Join(dir, "multi-user.target.wants", unit)) {
			u.enabled = true
		}
	}
	return u
}
