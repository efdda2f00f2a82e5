package testbed

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
)

// simulatorIdentity is the client identity, kubeconfig and log name of the
// device-plugin simulator.
const simulatorIdentity = "device-plugin-simulator"

// startSimulator runs the device-plugin simulator in a goroutine until
// Stop, logging where the processes log.
func (t *Testbed) startSimulator(output processOutput) error {
	l := t.layout
	client, err := kubernetes.NewForConfig(withProtobuf(restConfigFor(l.apiServerURL(), l.creds.caPEM, l.creds.clients[simulatorIdentity])))
	if err != nil {
		return fmt.Errorf("creating the device-plugin simulator's client: %w", err)
	}
	var (
		log     io.Writer
		logFile *os.File
	)
	if output.shared != nil {
		log = &linePrefixWriter{prefix: []byte(simulatorIdentity + ": "), out: output.shared, mu: output.mu}
	} else {
		logFile, err = os.OpenFile(filepath.Join(output.logDir, simulatorIdentity+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("opening the device-plugin simulator's log: %w", err)
		}
		log = logFile
	}

	ctx, cancel := context.WithCancel(context.Background())
	t.stopSimulator = cancel
	t.simulatorDone = make(chan struct{})
	go func() {
		defer close(t.simulatorDone)
		if logFile != nil {
			defer logFile.Close()
		}
		if err := RunDevicePluginSimulator(ctx, client, log); err != nil && ctx.Err() == nil {
			fmt.Fprintf(log, "device-plugin simulator stopped: %v\n", err)
		}
	}()
	return nil
}
