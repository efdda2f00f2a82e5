package tomledit

import (
	"fmt"
	"strconv"
	"strings"
)

// renderValue writes a Go value as a TOML value. It knows the types config
// edits need: string, bool, integers and string lists.
func renderValue(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return quote(v), nil
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case []string:
		quoted := make([]string, len(v))
		for i, s := range v {
			quoted[i] = quote(s)
		}
		return "[" + strings.Join(quoted, ", ") + "]", nil
	}
	return "", fmt.Errorf("tomledit: cannot write a %T", v)
}

// Quote writes s as a TOML basic string, for SetRaw.
func Quote(s string) string { return quote(s) }

// quote writes a TOML basic string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// renderKey writes a key bare when TOML allows it, quoted otherwise
// ("io.containerd.grpc.v1.cri").
func renderKey(key string) string {
	if key == "" {
		return `""`
	}
	for _, r := range key {
		bare := r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-'
		if !bare {
			return quote(key)
		}
	}
	return key
}
