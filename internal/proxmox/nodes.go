package proxmox

import (
	"context"
	"fmt"
	"sort"
)

// Node is a cluster node as /nodes lists it.
type Node struct {
	Name   string
	Status string // "online" | "offline" | "unknown"
}

// Nodes lists the cluster's nodes (GET /nodes), sorted by name.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	var rows []struct {
		Node   string `json:"node"`
		Status string `json:"status"`
	}
	if err := c.get(ctx, "/nodes", &rows); err != nil {
		return nil, fmt.Errorf("listing the cluster's nodes: %w", err)
	}
	out := make([]Node, 0, len(rows))
	for _, r := range rows {
		out = append(out, Node{Name: r.Node, Status: r.Status})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
