package main

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// inventoryListRequests sums the API server's apiserver_request_total for
// LISTs of nodes and pods (https://kubernetes.io/docs/reference/instrumentation/metrics/).
// The metric has no client label: the difference across a plan includes
// kwok's and the controllers' LISTs in that time, an upper bound.
func inventoryListRequests(ctx context.Context, client kubernetes.Interface) (int64, error) {
	body, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	var total int64
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `verb="LIST"`) ||
			(!strings.Contains(line, `resource="nodes"`) && !strings.Contains(line, `resource="pods"`)) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, err
		}
		total += int64(v)
	}
	return total, sc.Err()
}
