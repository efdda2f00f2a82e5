package gpuselect

import (
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	one := Choice{GPUs: []GPU{{Index: 0, UUID: "GPU-a"}}}
	two := Choice{GPUs: []GPU{{Index: 0, UUID: "GPU-a"}, {Index: 1, UUID: "GPU-b"}}, Link: "NV12"}
	for _, tc := range []struct {
		choice Choice
		format string
		want   string
	}{
		{one, "docker", "device=GPU-a\n"},
		{two, "docker", "\"device=GPU-a,GPU-b\"\n"},
		{two, "env", "NVIDIA_VISIBLE_DEVICES=GPU-a,GPU-b\n"},
		{two, "compose", "device_ids: [\"GPU-a\", \"GPU-b\"]\n"},
	} {
		got, err := Format(tc.choice, tc.format)
		if err != nil || got != tc.want {
			t.Errorf("Format(%d GPUs, %s) = %q, %v; want %q", len(tc.choice.GPUs), tc.format, got, err, tc.want)
		}
	}
	if _, err := Format(one, "yaml"); err == nil || !strings.Contains(err.Error(), `--format "yaml"`) {
		t.Errorf("an unknown format gave %v", err)
	}
	out, err := Format(two, "json")
	if err != nil {
		t.Fatal(err)
	}
	var decoded Choice
	if err := json.Unmarshal([]byte(out), &decoded); err != nil || len(decoded.GPUs) != 2 || decoded.Link != "NV12" {
		t.Errorf("json form %q decodes to %+v, %v", out, decoded, err)
	}
}

// TestDockerFormatReadsAsDockersGPUOption parses the docker form the way
// Docker's --gpus option does (one CSV record, then key=value fields), so a
// list of several UUIDs stays one device= field.
func TestDockerFormatReadsAsDockersGPUOption(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		var c Choice
		var want []string
		for i := 0; i < n; i++ {
			u := "GPU-" + strings.Repeat(string(rune('a'+i)), 8)
			c.GPUs = append(c.GPUs, GPU{Index: i, UUID: u})
			want = append(want, u)
		}
		value, err := Format(c, "docker")
		if err != nil {
			t.Fatal(err)
		}
		// What the shell hands Docker for --gpus "$(gpu-bootstrap select ...)".
		fields, err := csv.NewReader(strings.NewReader(strings.TrimSuffix(value, "\n"))).Read()
		if err != nil {
			t.Fatalf("%d GPUs: %q is not one CSV record: %v", n, value, err)
		}
		if len(fields) != 1 {
			t.Fatalf("%d GPUs: Docker would read %d fields from %q: %q", n, len(fields), value, fields)
		}
		key, list, ok := strings.Cut(fields[0], "=")
		if !ok || key != "device" || list != strings.Join(want, ",") {
			t.Errorf("%d GPUs: Docker reads %q", n, fields[0])
		}
	}
}
