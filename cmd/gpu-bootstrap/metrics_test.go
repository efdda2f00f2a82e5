package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	v1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml"
	"github.com/gpuinfra/terraform-provider-gpu/internal/nvml/nvmltest"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry/dcgm"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry/dcgm/dcgmtest"
	"github.com/gpuinfra/terraform-provider-gpu/internal/telemetry/podresources/podresourcestest"
)

// syncBuffer is a bytes.Buffer the command's goroutines and the test can
// share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// metricsServer is `gpu-bootstrap metrics` running in the background.
type metricsServer struct {
	url    string // http://127.0.0.1:port
	stderr *syncBuffer
	stop   func() int // interrupts the command and returns its exit code
}

var servingLine = regexp.MustCompile(`serving \d+ GPUs at (http://\S+)/metrics`)

// startMetrics runs `gpu-bootstrap metrics --listen 127.0.0.1:0 args...`
// until stop or the end of the test, and returns where it serves once it
// says so.
func startMetrics(t *testing.T, env environment, args ...string) *metricsServer {
	t.Helper()
	stderr := &syncBuffer{}
	env.stderr = stderr
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, append([]string{"metrics", "--listen", "127.0.0.1:0", "--sysfs", t.TempDir()}, args...), env)
	}()
	var once sync.Once
	code := -1
	stop := func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-exited:
			case <-time.After(30 * time.Second):
				t.Errorf("gpu-bootstrap metrics did not stop within 30 s of an interrupt\n%s", stderr)
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })

	deadline := time.After(30 * time.Second)
	for {
		if m := servingLine.FindStringSubmatch(stderr.String()); m != nil {
			return &metricsServer{url: m[1], stderr: stderr, stop: stop}
		}
		select {
		case code = <-exited:
			t.Fatalf("gpu-bootstrap metrics exited %d before serving:\n%s", code, stderr)
		case <-deadline:
			t.Fatalf("gpu-bootstrap metrics did not start serving within 30 s:\n%s", stderr)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func httpGet(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// series returns the exposition's sample lines of one metric.
func series(exposition, name string) []string {
	var out []string
	for _, line := range strings.Split(exposition, "\n") {
		if strings.HasPrefix(line, name+"{") {
			out = append(out, line)
		}
	}
	return out
}

func TestMetricsRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--max-age", "-1s"},
		{"--listen", ""},
		{"--hostname-label", "HOSTNAME"},
		{"--hostname-label", ""},
		{"now"},
	} {
		env, _, stderr, _ := testEnv(nvmltest.NewDGXA100(), nil)
		if code := runIn(env, append([]string{"metrics"}, args...)...); code != exitUsage {
			t.Errorf("metrics %v: exit %d, want %d\n%s", args, code, exitUsage, stderr)
		}
	}
}

func TestMetricsWithoutADriverExits1(t *testing.T) {
	env, _, stderr, _ := testEnv(nil, nil)
	if code := runIn(env, "metrics", "--listen", "127.0.0.1:0", "--sysfs", t.TempDir()); code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	if !strings.Contains(stderr.String(), "no NVIDIA driver loaded") || !strings.Contains(stderr.String(), "nothing to serve") {
		t.Errorf("stderr does not say there is no driver:\n%s", stderr)
	}
}

func TestMetricsWithoutAGPUExits1(t *testing.T) {
	env, _, stderr := scriptedEnv(&scriptedTelemetry{samples: []nvml.TelemetrySample{{Driver: nvml.Driver{Loaded: true, Version: "550.54.15"}}}})
	if code := runIn(env, "metrics", "--listen", "127.0.0.1:0"); code != exitError || !strings.Contains(stderr.String(), "reports no GPU") {
		t.Errorf("exit %d, want %d saying there is no GPU:\n%s", code, exitError, stderr)
	}
}

func TestMetricsCannotListenExits1(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	env, _, stderr, _ := testEnv(nvmltest.NewDGXA100(), nil)
	if code := runIn(env, "metrics", "--listen", busy.Addr().String(), "--sysfs", t.TempDir()); code != exitError || !strings.Contains(stderr.String(), "listening on "+busy.Addr().String()) {
		t.Errorf("exit %d, want %d naming the address:\n%s", code, exitError, stderr)
	}
}

func TestMetricsServesTheDGXA100UntilInterrupted(t *testing.T) {
	env, _, _, _ := testEnv(nvmltest.NewDGXA100(), map[string]string{"NODE_NAME": "dgx-1"})
	srv := startMetrics(t, env, "--pod-resources-socket", "")

	resp, body := httpGet(t, srv.url+"/metrics")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != dcgm.ContentType {
		t.Fatalf("GET /metrics: %s, Content-Type %q\n%s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	if resp.Header.Get(dcgm.AgeHeader) == "" {
		t.Errorf("GET /metrics has no %s header", dcgm.AgeHeader)
	}
	temps := series(body, "DCGM_FI_DEV_GPU_TEMP")
	if len(temps) != 8 {
		t.Fatalf("%d DCGM_FI_DEV_GPU_TEMP series, want one per GPU of the DGX A100:\n%s", len(temps), body)
	}
	want := `DCGM_FI_DEV_GPU_TEMP{gpu="7",UUID="GPU-00000000-0000-4000-8000-000000000007",pci_bus_id="00000000:BD:00.0",device="nvidia7",`
	if !strings.HasPrefix(temps[7], want) || !strings.Contains(temps[7], `hostname="dgx-1",DCGM_FI_DRIVER_VERSION="550.54.15"}`) {
		t.Errorf("GPU 7's temperature series:\n%s\nwant it to start %s", temps[7], want)
	}
	dcgmtest.Promtool(t, []byte(body))

	if resp, body := httpGet(t, srv.url+"/healthz"); resp.StatusCode != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /healthz: %s %q", resp.Status, body)
	}
	if resp, _ := httpGet(t, srv.url+"/"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /: %s, want 404", resp.Status)
	}
	if code := srv.stop(); code != exitOK || !strings.Contains(srv.stderr.String(), "gpu-bootstrap metrics: stopped") {
		t.Errorf("interrupted: exit %d, want 0\n%s", code, srv.stderr)
	}
}

// TestMetricsHostnameLabel serves the DGX A100 with each --hostname-label
// and finds the host label under that name, or both, on every series.
func TestMetricsHostnameLabel(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the labels between modelName and DCGM_FI_DRIVER_VERSION
	}{
		{nil, `,hostname="dgx-1",`}, // dcgm-exporter 4.6.0-4.8.3 and later
		{[]string{"--hostname-label", "hostname"}, `,hostname="dgx-1",`},
		{[]string{"--hostname-label", "Hostname"}, `,Hostname="dgx-1",`}, // 3.x to 4.5.3-4.8.2
		{[]string{"--hostname-label=both"}, `,Hostname="dgx-1",hostname="dgx-1",`},
	} {
		t.Run(strings.Join(tc.args, "="), func(t *testing.T) {
			env, _, _, _ := testEnv(nvmltest.NewDGXA100(), map[string]string{"NODE_NAME": "dgx-1"})
			srv := startMetrics(t, env, append([]string{"--pod-resources-socket", ""}, tc.args...)...)
			_, body := httpGet(t, srv.url+"/metrics")
			n := 0
			for _, line := range strings.Split(body, "\n") {
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				n++
				if !strings.Contains(line, `modelName="Mock NVIDIA A100-SXM4-40GB"`+tc.want+`DCGM_FI_DRIVER_VERSION="550.54.15"}`) {
					t.Errorf("%v: want %s between modelName and the driver version: %s", tc.args, tc.want, line)
				}
			}
			if n < 8 {
				t.Fatalf("%v: %d series:\n%s", tc.args, n, body)
			}
			dcgmtest.Promtool(t, []byte(body))
		})
	}
}

func TestMetricsLabelsTheGPUsPodsHold(t *testing.T) {
	socket, _ := podresourcestest.Start(t, &v1.ListPodResourcesResponse{PodResources: []*v1.PodResources{{
		Namespace: "ml", Name: "trainer-0",
		Containers: []*v1.ContainerResources{{Name: "trainer", Devices: []*v1.ContainerDevices{{
			ResourceName: "nvidia.com/gpu",
			DeviceIds:    []string{"GPU-00000000-0000-4000-8000-000000000003", "GPU-00000000-0000-4000-8000-000000000005::1"},
		}}}},
	}}})
	env, _, _, _ := testEnv(nvmltest.NewDGXA100(), map[string]string{"NODE_NAME": "dgx-1"})
	srv := startMetrics(t, env, "--pod-resources-socket", socket)

	_, body := httpGet(t, srv.url+"/metrics")
	const pod = `,container="trainer",namespace="ml",pod="trainer-0"}`
	for _, line := range series(body, "DCGM_FI_DEV_GPU_TEMP") {
		held := strings.Contains(line, `gpu="3"`) || strings.Contains(line, `gpu="5"`)
		if held != strings.Contains(line, pod) {
			t.Errorf("pod labels on the GPUs the pod holds (3 and 5), only there: %s", line)
		}
	}
}

func TestMetricsExampleUnitFlagsParse(t *testing.T) {
	const unit = "../../examples/bootstrap/metrics/gpu-bootstrap-metrics.service"
	f, err := os.Open(unit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var execStart string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if v, ok := strings.CutPrefix(scanner.Text(), "ExecStart="); ok {
			execStart = v
		}
	}
	fields := strings.Fields(execStart)
	if len(fields) < 2 || filepath.Base(fields[0]) != "gpu-bootstrap" || fields[1] != "metrics" {
		t.Fatalf("%s: ExecStart=%s does not run gpu-bootstrap metrics", unit, execStart)
	}
	var flags metricsFlags
	env, _, stderr, _ := testEnv(nil, nil)
	fs := flag.NewFlagSet("metrics", flag.ContinueOnError)
	flags.register(fs)
	if code, ok := parseFlags(fs, fields[2:], env); !ok {
		t.Fatalf("%s: gpu-bootstrap metrics refuses its flags (exit %d): %s", unit, code, stderr)
	}
	if err := flags.validate(); err != nil {
		t.Errorf("%s: %v", unit, err)
	}
}

// prometheusServer is a real Prometheus server (Debian's prometheus
// package) scraping targets every second.
type prometheusServer struct {
	url string
}

// startPrometheus starts one scraping target; job is more of the job's
// configuration (YAML at the job's indentation), "" for none.
func startPrometheus(t *testing.T, target string, job ...string) *prometheusServer {
	t.Helper()
	binary := dcgmtest.NeedTool(t, "prometheus")
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	must(t, os.WriteFile(config, []byte(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: gpu
    static_configs:
      - targets: ["`+target+`"]
`+strings.Join(job, "")), 0o644))
	// Prometheus takes no port 0: ask the kernel for a free one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	var log syncBuffer
	cmd := exec.Command(binary, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &log, &log
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("prometheus log:\n%s", log.String())
		}
	})
	return &prometheusServer{url: "http://" + addr}
}

// promSample is one series of an instant query's answer.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant query; a server not yet up is an empty answer.
func (p *prometheusServer) query(t *testing.T, q string) []promSample {
	t.Helper()
	resp, err := http.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var answer struct {
		Status string `json:"status"`
		Data   struct {
			Result []promSample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || answer.Status != "success" {
		return nil
	}
	return answer.Data.Result
}

// waitFor queries until the answer has want series, for up to a minute.
func (p *prometheusServer) waitFor(t *testing.T, q string, want int) []promSample {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := p.query(t, q)
		if len(got) == want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus: %s has %d series after a minute, want %d: %v", q, len(got), want, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestMetricsScrapedByARealPrometheus(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	fleet.Script(0, nvmltest.Step{TemperatureC: 40, PowerDrawMW: 90000}, nvmltest.Step{TemperatureC: 71, PowerDrawMW: 350000})
	env, _, _, _ := testEnv(fleet, map[string]string{"NODE_NAME": "dgx-1"})
	srv := startMetrics(t, env, "--pod-resources-socket", "")
	prom := startPrometheus(t, strings.TrimPrefix(srv.url, "http://"))

	temps := prom.waitFor(t, "DCGM_FI_DEV_GPU_TEMP", 8)
	for _, s := range temps {
		if s.Metric["gpu"] == "0" && (s.Value[1] != "40" || s.Metric["UUID"] != "GPU-00000000-0000-4000-8000-000000000000" || s.Metric["hostname"] != "dgx-1") {
			t.Errorf("GPU 0's temperature in Prometheus: %v", s)
		}
	}
	// A scrape slower than the 1 s timeout on a loaded machine makes up 0
	// for a second: wait for a 1 rather than judge one reading.
	prom.waitFor(t, `up{job="gpu"} == 1`, 1)
	// The dashboard's variables: label_values(DCGM_FI_DEV_GPU_TEMP, instance) and (…, gpu).
	if got := prom.waitFor(t, `count by (instance) (DCGM_FI_DEV_GPU_TEMP)`, 1); got[0].Value[1] != "8" {
		t.Errorf("GPUs per instance: %v", got)
	}
	// GPU 0 heats up: the next scrapes carry it into Prometheus.
	fleet.Advance()
	prom.waitFor(t, `DCGM_FI_DEV_GPU_TEMP{gpu="0"} == 71`, 1)
	prom.waitFor(t, `DCGM_FI_DEV_POWER_USAGE{gpu="0"} == 350`, 1)
}

// TestMetricsOldHostnameRelabelled scrapes --hostname-label Hostname (as a
// dcgm-exporter before 4.6.0-4.8.3 writes it) through the relabelling rule
// examples/bootstrap/metrics/README.md gives: queries keyed on hostname
// find the GPUs.
func TestMetricsOldHostnameRelabelled(t *testing.T) {
	env, _, _, _ := testEnv(nvmltest.NewDGXA100(), map[string]string{"NODE_NAME": "dgx-1"})
	srv := startMetrics(t, env, "--pod-resources-socket", "", "--hostname-label", "Hostname")
	prom := startPrometheus(t, strings.TrimPrefix(srv.url, "http://"), `    metric_relabel_configs:
      - source_labels: [Hostname]
        regex: (.+)
        target_label: hostname
`)
	got := prom.waitFor(t, `count by (hostname, Hostname) (DCGM_FI_DEV_GPU_TEMP{hostname="dgx-1"})`, 1)
	if got[0].Value[1] != "8" || got[0].Metric["Hostname"] != "dgx-1" {
		t.Errorf("GPUs under hostname after relabelling: %v", got)
	}
}

func TestMetricsGivesMIGInstancesTheirMemoryAndPods(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	d := fleet.Device(0)
	d.MigMode = gonvml.DEVICE_MIG_ENABLE
	const mib = 1 << 20
	d.MemoryInfo = gonvml.Memory{Total: 40960 * mib, Used: 5100 * mib, Free: 35860 * mib}
	const migUUID = "MIG-11111111-1111-1111-1111-111111111111"
	migDevice := &mock.Device{
		GetGpuInstanceIdFunc:     func() (int, gonvml.Return) { return 1, gonvml.SUCCESS },
		GetComputeInstanceIdFunc: func() (int, gonvml.Return) { return 0, gonvml.SUCCESS },
		GetUUIDFunc:              func() (string, gonvml.Return) { return migUUID, gonvml.SUCCESS },
		GetAttributesFunc: func() (gonvml.DeviceAttributes, gonvml.Return) {
			return gonvml.DeviceAttributes{GpuInstanceSliceCount: 3, ComputeInstanceSliceCount: 3, MemorySizeMB: 19968}, gonvml.SUCCESS
		},
		GetMemoryInfoFunc: func() (gonvml.Memory, gonvml.Return) {
			return gonvml.Memory{Total: 19968 * mib, Used: 5000 * mib, Free: 14968 * mib}, gonvml.SUCCESS
		},
	}
	d.GetMaxMigDeviceCountFunc = func() (int, gonvml.Return) { return 7, gonvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		if i == 0 {
			return migDevice, gonvml.SUCCESS
		}
		return nil, gonvml.ERROR_NOT_FOUND
	}
	socket, _ := podresourcestest.Start(t, &v1.ListPodResourcesResponse{PodResources: []*v1.PodResources{{
		Namespace: "ml", Name: "notebook",
		Containers: []*v1.ContainerResources{{Name: "jupyter", Devices: []*v1.ContainerDevices{{
			ResourceName: "nvidia.com/mig-3g.20gb", DeviceIds: []string{migUUID},
		}}}},
	}}})
	env, _, _, _ := testEnv(fleet, map[string]string{"NODE_NAME": "dgx-1"})
	srv := startMetrics(t, env, "--pod-resources-socket", socket)

	_, body := httpGet(t, srv.url+"/metrics")
	const gpu0 = `{gpu="0",UUID="GPU-00000000-0000-4000-8000-000000000000",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="Mock NVIDIA A100-SXM4-40GB",`
	for _, want := range []string{
		"DCGM_FI_DEV_FB_USED" + gpu0 + `hostname="dgx-1",DCGM_FI_DRIVER_VERSION="550.54.15"} 5100`,
		"DCGM_FI_DEV_FB_USED" + gpu0 + `GPU_I_PROFILE="3g.20gb",GPU_I_ID="1",hostname="dgx-1",DCGM_FI_DRIVER_VERSION="550.54.15",container="jupyter",namespace="ml",pod="notebook"} 5000`,
	} {
		if !slices.Contains(series(body, "DCGM_FI_DEV_FB_USED"), want) {
			t.Errorf("no series\n%s\nin\n%s", want, strings.Join(series(body, "DCGM_FI_DEV_FB_USED"), "\n"))
		}
	}
	if n := strings.Count(body, "GPU_I_ID="); n != 1 {
		t.Errorf("%d series with GPU_I_ID, want only the instance's FB_USED:\n%s", n, body)
	}
	dcgmtest.Promtool(t, []byte(body))
}

// The driver's reserve comes from nvmlDeviceGetMemoryInfo_v2 only: a GPU
// whose driver answers v1 alone has no DCGM_FI_DEV_FB_RESERVED series, not
// a 0, and its FB_USED counts the reserve.
func TestMetricsServesTheDriversReserveWhereV2GivesIt(t *testing.T) {
	fleet := nvmltest.NewDGXA100()
	fleet.GPUs[0].ReservedMiB = 480
	fleet.GPUs[1].ReservedMiB = 480
	fleet.Device(1).GetMemoryInfo_v2Func = func() (gonvml.Memory_v2, gonvml.Return) {
		return gonvml.Memory_v2{}, gonvml.ERROR_FUNCTION_NOT_FOUND
	}
	env, _, _, _ := testEnv(fleet, map[string]string{"NODE_NAME": "dgx-1"})
	srv := startMetrics(t, env, "--pod-resources-socket", "")

	_, body := httpGet(t, srv.url+"/metrics")
	const header = "# HELP DCGM_FI_DEV_FB_RESERVED Framebuffer memory reserved (in MiB).\n# TYPE DCGM_FI_DEV_FB_RESERVED gauge\n"
	if !strings.Contains(body, header) {
		t.Errorf("no HELP and TYPE lines\n%s\nin\n%s", header, body)
	}
	reserved := series(body, "DCGM_FI_DEV_FB_RESERVED")
	if len(reserved) != 7 {
		t.Fatalf("%d DCGM_FI_DEV_FB_RESERVED series, want one per GPU but the one read with v1:\n%s", len(reserved), strings.Join(reserved, "\n"))
	}
	gpu := func(i string) string { return `{gpu="` + i + `",` }
	if !strings.HasPrefix(reserved[0], "DCGM_FI_DEV_FB_RESERVED"+gpu("0")) || !strings.HasSuffix(reserved[0], "} 480") {
		t.Errorf("GPU 0's reserve: %s, want 480", reserved[0])
	}
	if !strings.HasPrefix(reserved[1], "DCGM_FI_DEV_FB_RESERVED"+gpu("2")) || !strings.HasSuffix(reserved[1], "} 0") {
		t.Errorf("after GPU 0 comes GPU 2 (GPU 1 gave no reserve), with none reserved: %s", reserved[1])
	}
	if used := series(body, "DCGM_FI_DEV_FB_USED"); !strings.HasPrefix(used[1], "DCGM_FI_DEV_FB_USED"+gpu("1")) || !strings.HasSuffix(used[1], "} 480") {
		t.Errorf("GPU 1, read with v1, counts the reserve as used: %s", used[1])
	}
	dcgmtest.Promtool(t, []byte(body))
}
