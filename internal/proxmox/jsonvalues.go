package proxmox

import (
	"encoding/json"
	"strconv"
	"strings"
)

// flexInt decodes a PVE integer, which the API sends as a number or, where
// Perl kept it a string ("/cluster/nextid": "100"), as a string.
type flexInt int

func (f *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*f = 0
		return nil
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	*f = flexInt(n)
	return nil
}

// flexBool decodes a PVE boolean: 1/0, "1"/"0" or true/false.
type flexBool bool

func (f *flexBool) UnmarshalJSON(b []byte) error {
	switch strings.Trim(string(b), `"`) {
	case "1", "true":
		*f = true
	default:
		*f = false
	}
	return nil
}

// configString renders a config value as PVE's string form.
func configString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		if x {
			return "1"
		}
		return "0"
	case nil:
		return ""
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// splitOptions parses "a=1,b=2" (a property string); a leading value
// without "=" goes under key def.
func splitOptions(s, def string) map[string]string {
	out := map[string]string{}
	for i, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			if i == 0 && def != "" {
				out[def] = part
			}
			continue
		}
		out[strings.TrimSpace(k)] = v
	}
	return out
}
