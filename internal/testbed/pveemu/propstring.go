package pveemu

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// property is one key=value of a property string, in the order given.
type property struct{ key, value string }

// parseProperties splits a property string ("local-lvm:32,discard=on");
// a part without "=" is the format's default key's value.
func parseProperties(value, defaultKey string) []property {
	var out []property
	for _, part := range strings.Split(value, ",") {
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			k, v = defaultKey, part
		}
		out = append(out, property{k, v})
	}
	return out
}

// printProperties is pve-common PVE::JSONSchema::print_property_string:
// the default key's value first (bare), then the other keys sorted.
func printProperties(defaultValue string, props map[string]string) string {
	parts := []string{}
	if defaultValue != "" {
		parts = append(parts, defaultValue)
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		parts = append(parts, k+"="+props[k])
	}
	return strings.Join(parts, ",")
}

// formatSize is PVE::JSONSchema::format_size: bytes in the largest unit
// that divides them exactly ("16G", "4M", "528K").
func formatSize(bytes int64) string {
	units := []string{"K", "M", "G", "T"}
	out := strconv.FormatInt(bytes, 10)
	for _, u := range units {
		if bytes%1024 != 0 {
			break
		}
		bytes /= 1024
		out = strconv.FormatInt(bytes, 10) + u
	}
	return out
}
