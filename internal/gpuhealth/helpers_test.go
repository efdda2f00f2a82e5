package gpuhealth

import (
	"strings"
	"unicode/utf8"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }
func utf8Valid(s string) bool     { return utf8.ValidString(s) }
