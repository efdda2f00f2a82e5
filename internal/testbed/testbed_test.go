package testbed

import (
	"context"
	"crypto/x509"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeBackend uses its Host as a real backend does: a process, an
// in-process component, ports and a serving certificate.
type fakeBackend struct {
	name  string
	start func(ctx context.Context, host *Host) error
	env   map[string]string
}

func (b *fakeBackend) Name() string                                { return b.name }
func (b *fakeBackend) Env() map[string]string                      { return b.env }
func (b *fakeBackend) Start(ctx context.Context, host *Host) error { return b.start(ctx, host) }

func TestStartRunsEveryBackendThroughItsHostAndStopUndoesIt(t *testing.T) {
	var (
		order        []string
		sleeperHost  *Host
		componentUp  = make(chan struct{})
		componentCtx context.Context
	)
	sleeper := &fakeBackend{name: "sleeper", env: map[string]string{"SLEEPER_ENDPOINT": "https://127.0.0.1:1"}}
	sleeper.start = func(_ context.Context, host *Host) error {
		order = append(order, "sleeper")
		sleeperHost = host
		ports, err := host.FreePorts("api")
		if err != nil {
			return err
		}
		sleeper.env["SLEEPER_ENDPOINT"] = "https://127.0.0.1:" + strconv.Itoa(ports[0])
		pair, err := host.CA().ServingPair("sleeper", []string{"localhost"}, nil)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(host.Dir(), "serving.crt"), pair.CertPEM, 0o600); err != nil {
			return err
		}
		return host.StartProcess("sleep", "/bin/sleep", "600")
	}
	component := &fakeBackend{name: "component", env: map[string]string{"COMPONENT": "1"}}
	component.start = func(_ context.Context, host *Host) error {
		order = append(order, "component")
		return host.Go("ticker", func(ctx context.Context, log io.Writer) error {
			componentCtx = ctx
			close(componentUp)
			<-ctx.Done()
			return nil
		})
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tb, err := Start(ctx, Options{Backends: []Backend{sleeper, component}})
	require.NoError(t, err)
	<-componentUp
	require.Equal(t, []string{"sleeper", "component"}, order, "backends start in order")
	require.Equal(t, filepath.Join(tb.Dir(), "sleeper"), sleeperHost.Dir())
	require.DirExists(t, sleeperHost.Dir())
	require.Equal(t, map[string]string{"SLEEPER_ENDPOINT": sleeper.env["SLEEPER_ENDPOINT"], "COMPONENT": "1"}, tb.Env())

	// The backend's certificate chains to the CA the testbed wrote out.
	caPEM, err := os.ReadFile(sleeperHost.CAFile())
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caPEM))
	servingPEM, err := os.ReadFile(filepath.Join(sleeperHost.Dir(), "serving.crt"))
	require.NoError(t, err)
	_, err = parseCertificate(t, servingPEM).Verify(x509.VerifyOptions{Roots: roots, DNSName: "localhost"})
	require.NoError(t, err)

	// The state on disk says what runs, where, and how to reach it.
	state, found, err := ReadState(tb.Dir())
	require.NoError(t, err)
	require.True(t, found)
	require.True(t, state.Ready)
	require.Equal(t, []string{"sleeper", "component"}, state.Backends)
	require.Equal(t, tb.Env(), state.Env)
	require.Contains(t, state.Ports, "sleeper/api")
	require.Len(t, state.Processes, 1)
	require.Equal(t, "sleep", state.Processes[0].Name)
	require.Len(t, state.Running(), 1)

	require.NoError(t, tb.Stop())
	require.Empty(t, state.Running(), "the process is gone")
	require.Error(t, componentCtx.Err(), "the in-process component was stopped")
	require.NoDirExists(t, tb.Dir(), "the temporary directory is removed")
	require.NoError(t, tb.Stop(), "a second Stop is harmless")
}

func TestAProcessThatExitsWhileStartingFailsTheStart(t *testing.T) {
	dir := t.TempDir()
	crasher := &fakeBackend{name: "crasher"}
	crasher.start = func(ctx context.Context, host *Host) error {
		if err := host.StartProcess("crash", "/bin/sh", "-c", "echo 'cannot bind'; exit 3"); err != nil {
			return err
		}
		<-ctx.Done() // a backend waiting for its process to be ready
		return context.Cause(ctx)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Start(ctx, Options{Backends: []Backend{crasher}, Dir: dir})
	require.ErrorContains(t, err, "starting the crasher backend: crash exited: exit status 3")
	require.ErrorContains(t, err, "cannot bind", "the error ends with the process's log")
}

func TestStartRefusesBadOptions(t *testing.T) {
	idle := func(name string) Backend {
		return &fakeBackend{name: name, start: func(context.Context, *Host) error { return nil }}
	}
	tests := []struct {
		description string
		opts        Options
		want        string
	}{
		{"A testbed needs a backend.", Options{}, "no backends"},
		{"Backend names are distinct.", Options{Backends: []Backend{idle("a"), idle("a")}}, `two backends named "a"`},
		{"A backend name is a directory name of its own.", Options{Backends: []Backend{idle("pki")}}, `invalid backend name "pki"`},
		{"A backend name is lowercase.", Options{Backends: []Backend{idle("Kube")}}, `invalid backend name "Kube"`},
		{"A detached testbed needs a directory.", Options{Backends: []Backend{idle("a")}, Detached: true}, "needs a Dir"},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			_, err := Start(context.Background(), tt.opts)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestADirectoryHoldsOneTestbed(t *testing.T) {
	dir := t.TempDir()
	idle := &fakeBackend{name: "idle", start: func(context.Context, *Host) error { return nil }}
	tb, err := Start(context.Background(), Options{Backends: []Backend{idle}, Dir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tb.Stop()) })
	_, err = Start(context.Background(), Options{Backends: []Backend{idle}, Dir: dir})
	require.ErrorContains(t, err, "it already holds one")
}

func TestADetachedTestbedRunsNoInProcessComponents(t *testing.T) {
	dir := t.TempDir()
	inProcess := &fakeBackend{name: "in-process", start: func(_ context.Context, host *Host) error {
		require.True(t, host.Detached())
		return host.Go("component", func(context.Context, io.Writer) error { return nil })
	}}
	_, err := Start(context.Background(), Options{Backends: []Backend{inProcess}, Dir: dir, Detached: true})
	require.ErrorContains(t, err, "a detached testbed runs processes only")
	require.NoError(t, RemoveFiles(dir))
	require.NoDirExists(t, dir, "RemoveFiles cleans up after a failed start")
}
