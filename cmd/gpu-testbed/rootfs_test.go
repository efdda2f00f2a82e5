package main

import (
	"context"
	"strings"
	"testing"
)

func TestRootfsRefusesAMirrorDebootstrapCannotFetchFrom(t *testing.T) {
	err := runRootfs(context.Background(), []string{"--suite", "trixie", "--mirror", "ftp://mirror.example/debian", "--dir", t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "--mirror") || !strings.Contains(err.Error(), "ftp://mirror.example/debian") {
		t.Fatalf("rootfs --mirror ftp://…: %v, want an error naming --mirror and the URL", err)
	}
}
