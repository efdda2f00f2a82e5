package testbed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// ControlPrefix is the path under which an emulator serves its test
// controls (fault switches, out-of-band changes) for a detached testbed,
// where the emulator runs in a process of its own.
const ControlPrefix = "/_testbed/"

// controlTimeout bounds one test-control call.
const controlTimeout = 10 * time.Second

// CallControl posts in as JSON to the emulator's test control name at
// baseURL (ControlPrefix is added) and decodes its answer into out, if not
// nil. client nil means http.DefaultClient.
func CallControl(client *http.Client, baseURL, name string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+ControlPrefix+name, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("test control %s: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("test control %s: %s: %s", name, resp.Status, strings.TrimSpace(string(msg)))
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}
