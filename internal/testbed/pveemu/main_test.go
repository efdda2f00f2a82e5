package pveemu

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// emu is this package's testbed: the emulator alone.
var emu *Emulator

// serveEnv makes this test binary the emulator's own process (Serve),
// for the tests of an emulator started with Options.Command.
const serveEnv = "PVEEMU_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		if err := Serve(ctx, os.Args[1:], os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	e := New(Options{TaskDuration: 50 * time.Millisecond})
	os.Exit(testbed.Main(m, testbed.Options{Backends: []testbed.Backend{e}}, func(*testbed.Testbed) { emu = e }))
}

// auth is how a test call authenticates.
type auth struct {
	token  string // "USER@REALM!NAME=SECRET"
	ticket string
	csrf   string
}

var (
	tokenAuth     = auth{token: RoleTokenID + "=" + RoleTokenSecret} // exactly the documented role
	rootTokenAuth = auth{token: RootTokenID + "=" + RootTokenSecret} // root@pam!gpu: root privileges, but not root@pam
)

// answer is one API answer.
type answer struct {
	status int
	reason string
	body   []byte
	data   json.RawMessage
	env    map[string]json.RawMessage
}

func (a answer) String() string { return fmt.Sprintf("%d %s: %s", a.status, a.reason, a.body) }

// httpClient trusts the testbed CA only.
func httpClient(t testing.TB) *http.Client {
	t.Helper()
	caPEM, err := os.ReadFile(emu.CAFile())
	if err != nil {
		t.Fatalf("reading the testbed CA: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("the testbed CA file holds no certificate")
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// call makes one API call with form parameters (query for GET and DELETE).
func call(t testing.TB, a auth, method, path string, params url.Values) answer {
	t.Helper()
	target := emu.URL() + path
	var body io.Reader
	if method == http.MethodGet || method == http.MethodDelete {
		if len(params) > 0 {
			target += "?" + params.Encode()
		}
	} else {
		body = strings.NewReader(params.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if a.token != "" {
		req.Header.Set("Authorization", "PVEAPIToken="+a.token)
	}
	if a.ticket != "" {
		req.AddCookie(&http.Cookie{Name: "PVEAuthCookie", Value: a.ticket})
	}
	if a.csrf != "" {
		req.Header.Set("CSRFPreventionToken", a.csrf)
	}
	resp, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := answer{status: resp.StatusCode, reason: strings.TrimPrefix(resp.Status, fmt.Sprint(resp.StatusCode)+" "), body: raw}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.env); err != nil {
			t.Fatalf("%s %s: the body is not JSON: %s", method, path, raw)
		}
		out.data = out.env["data"]
	}
	return out
}

// ok makes a call that must answer 200 and decodes its data into out.
func ok(t testing.TB, a auth, method, path string, params url.Values, out any) {
	t.Helper()
	ans := call(t, a, method, path, params)
	if ans.status != http.StatusOK {
		t.Fatalf("%s %s: %s", method, path, ans)
	}
	if out != nil {
		if err := json.Unmarshal(ans.data, out); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, path, ans.data, err)
		}
	}
}

// fails makes a call that must fail with that status and a reason
// phrase containing reason; the body's message must say the same.
func fails(t testing.TB, a auth, method, path string, params url.Values, status int, reason string) answer {
	t.Helper()
	ans := call(t, a, method, path, params)
	if ans.status != status || !strings.Contains(ans.reason, reason) {
		t.Fatalf("%s %s: want %d %q, got %s", method, path, status, reason, ans)
	}
	if status != http.StatusUnauthorized || ans.env != nil {
		var msg string
		if err := json.Unmarshal(ans.env["message"], &msg); err != nil || !strings.Contains(msg, reason) {
			t.Fatalf("%s %s: the body's message is not %q: %s", method, path, reason, ans.body)
		}
		if string(ans.data) != "null" {
			t.Fatalf("%s %s: data is not null: %s", method, path, ans.body)
		}
	}
	return ans
}

// ticketAuth logs root@pam in through POST /access/ticket.
func ticketAuth(t testing.TB) auth {
	t.Helper()
	var tk struct {
		Ticket string `json:"ticket"`
		CSRF   string `json:"CSRFPreventionToken"`
		User   string `json:"username"`
	}
	ok(t, auth{}, "POST", "/access/ticket", url.Values{"username": {RootUser}, "password": {RootPassword}}, &tk)
	if tk.Ticket == "" || tk.CSRF == "" || tk.User != RootUser {
		t.Fatalf("ticket answer without ticket, CSRF token or user: %+v", tk.User)
	}
	return auth{ticket: tk.Ticket, csrf: tk.CSRF}
}

// taskStatus is a task's status answer.
type taskStatus struct {
	UPID       string `json:"upid"`
	Status     string `json:"status"`
	ExitStatus string `json:"exitstatus"`
	Type       string `json:"type"`
	ID         string `json:"id"`
	User       string `json:"user"`
	TokenID    string `json:"tokenid"`
	PID        int    `json:"pid"`
	StartTime  int64  `json:"starttime"`
}

// waitTask follows a task through its status with backoff until it
// stops, and returns its status and log lines.
func waitTask(t testing.TB, a auth, node, upid string) (taskStatus, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	delay := 10 * time.Millisecond
	for {
		var st taskStatus
		ok(t, a, "GET", "/nodes/"+node+"/tasks/"+url.PathEscape(upid)+"/status", nil, &st)
		if st.Status == "stopped" {
			var lines []struct {
				N int    `json:"n"`
				T string `json:"t"`
			}
			ok(t, a, "GET", "/nodes/"+node+"/tasks/"+url.PathEscape(upid)+"/log", url.Values{"limit": {"500"}}, &lines)
			var log []string
			for i, l := range lines {
				if l.N != i+1 {
					t.Fatalf("task log line %d is numbered %d", i+1, l.N)
				}
				log = append(log, l.T)
			}
			return st, log
		}
		if st.Status != "running" {
			t.Fatalf("task %s: status %q", upid, st.Status)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s still running", upid)
		case <-time.After(delay):
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// upid makes a call answering a UPID and returns it.
func upid(t testing.TB, a auth, method, path string, params url.Values) string {
	t.Helper()
	var u string
	ok(t, a, method, path, params, &u)
	if !strings.HasPrefix(u, "UPID:") {
		t.Fatalf("%s %s: not a UPID: %q", method, path, u)
	}
	return u
}

// runTask makes a call answering a UPID and follows the task to its end.
func runTask(t testing.TB, a auth, node, method, path string, params url.Values) (taskStatus, []string) {
	t.Helper()
	return waitTask(t, a, node, upid(t, a, method, path, params))
}

// mustSucceed fails unless the task ended OK (or with warnings).
func mustSucceed(t testing.TB, st taskStatus, log []string) {
	t.Helper()
	if st.ExitStatus != "OK" && !strings.HasPrefix(st.ExitStatus, "WARNINGS: ") {
		t.Fatalf("task %s failed: %s\n%s", st.Type, st.ExitStatus, strings.Join(log, "\n"))
	}
}

// mustRun makes a call answering a UPID and fails unless its task succeeds.
func mustRun(t testing.TB, a auth, node, method, path string, params url.Values) {
	t.Helper()
	st, log := runTask(t, a, node, method, path, params)
	mustSucceed(t, st, log)
}

// freeVMID asks the emulator for the next free VMID.
func freeVMID(t testing.TB) int {
	t.Helper()
	var id string
	ok(t, tokenAuth, "GET", "/cluster/nextid", nil, &id)
	var n int
	if _, err := fmt.Sscan(id, &n); err != nil {
		t.Fatalf("nextid %q is not a number", id)
	}
	return n
}

// createVM creates a stopped VM on node with these parameters as root
// and waits for the task.
func createVM(t testing.TB, a auth, node string, params url.Values) int {
	t.Helper()
	vmid := freeVMID(t)
	params.Set("vmid", fmt.Sprint(vmid))
	st, log := runTask(t, a, node, "POST", "/nodes/"+node+"/qemu", params)
	mustSucceed(t, st, log)
	t.Cleanup(func() { _ = emu.DeleteVMOutOfBand(node, vmid) })
	return vmid
}
