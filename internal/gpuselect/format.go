package gpuselect

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Formats are the output forms of a choice.
var Formats = []string{"docker", "env", "compose", "json"}

// Format spells a choice for its consumer:
//
//   - docker: the value of `docker run --gpus`. One GPU is `device=UUID`;
//     several are `"device=UUID1,UUID2"` with the double quotes, because
//     Docker reads the --gpus value as one CSV record (docker/cli,
//     opts/gpus.go: GpuOpts.Set) and would split an unquoted list at its
//     commas, failing on the second UUID as an invalid count
//     (`docker run --gpus "$(gpu-bootstrap select --count 2)"`).
//   - env: `NVIDIA_VISIBLE_DEVICES=UUID1,UUID2`, for the NVIDIA runtime
//     (`docker run --runtime nvidia -e ...`, a systemd EnvironmentFile).
//   - compose: a `device_ids` list for a Compose service's
//     deploy.resources.reservations.devices entry.
//   - json: the choice with the reasons GPUs were turned down.
func Format(c Choice, format string) (string, error) {
	uuids := c.UUIDs()
	switch format {
	case "docker":
		value := "device=" + strings.Join(uuids, ",")
		if len(uuids) > 1 {
			value = `"` + value + `"`
		}
		return value + "\n", nil
	case "env":
		return "NVIDIA_VISIBLE_DEVICES=" + strings.Join(uuids, ",") + "\n", nil
	case "compose":
		quoted := make([]string, len(uuids))
		for i, u := range uuids {
			quoted[i] = fmt.Sprintf("%q", u)
		}
		return "device_ids: [" + strings.Join(quoted, ", ") + "]\n", nil
	case "json":
		out, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			return "", err
		}
		return string(out) + "\n", nil
	}
	return "", fmt.Errorf("--format %q: use one of %s", format, strings.Join(Formats, ", "))
}
