package awsemu

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// serveFlags are the flags Start gives Options.Command: everything Serve
// needs to be the emulator Start set up.
func (e *Emulator) serveFlags(host *testbed.Host) []string {
	var ports []string
	for _, name := range servicePorts {
		ports = append(ports, name+"="+strconv.Itoa(e.ports[name]))
	}
	return []string{
		"--dir", e.dir,
		"--region", e.opts.Region,
		"--cluster-name", e.opts.ClusterName,
		"--active-delay", e.opts.ActiveDelay.String(),
		"--node-join-delay", e.opts.NodeJoinDelay.String(),
		"--ports", strings.Join(ports, ","),
		"--ca-file", host.CAFile(),
		"--kubeconfig", k8s.AdminKubeconfigIn(filepath.Dir(host.Dir())),
		"--capacity-reservations", capacitySeedsFlag(e.opts.CapacityReservations),
		"--block-reclaim-lead", e.opts.BlockReclaimLead.String(),
		"--repair-minute", e.opts.RepairMinute.String(),
	}
}

// Serve runs the emulator in the foreground with the flags Start passes
// Options.Command, until ctx ends: the body of `gpu-testbed serve-aws`.
func Serve(ctx context.Context, args []string, log io.Writer) error {
	flags := flag.NewFlagSet("serve-aws", flag.ContinueOnError)
	dir := flags.String("dir", "", "the emulator's directory (its webhook certificate)")
	region := flags.String("region", DefaultRegion, "the emulated region")
	cluster := flags.String("cluster-name", DefaultClusterName, "the EKS cluster that exists from the start")
	activeDelay := flags.Duration("active-delay", 2*time.Second, "how long CREATING, UPDATING and DELETING last")
	joinDelay := flags.Duration("node-join-delay", time.Second, "how long after ACTIVE nodes register")
	portList := flags.String("ports", "", "service=port,... for eks, ec2, autoscaling, sts, webhook")
	caFile := flags.String("ca-file", "", "the testbed CA certificate (the cluster's certificateAuthority)")
	kubeconfig := flags.String("kubeconfig", "", "the testbed cluster's admin kubeconfig (read once it exists)")
	seeds := flags.String("capacity-reservations", "", "EC2 capacity reservations to put in the account at start: a JSON array of CapacityReservationSeed")
	reclaimLead := flags.Duration("block-reclaim-lead", blockReclaimLead, "how long before a Capacity Block's end EC2 terminates its instances")
	repairMinute := flags.Duration("repair-minute", time.Minute, "how long one minute of node auto repair's waits lasts")
	if err := flags.Parse(args); err != nil {
		return err
	}
	var capacity []CapacityReservationSeed
	if *seeds != "" {
		if err := json.Unmarshal([]byte(*seeds), &capacity); err != nil {
			return fmt.Errorf("--capacity-reservations: %w", err)
		}
	}
	lead := *reclaimLead
	if lead == 0 {
		lead = -1 // at the end, not the default
	}
	if *dir == "" || *portList == "" || *caFile == "" || *kubeconfig == "" {
		return errors.New("serve-aws needs --dir, --ports, --ca-file and --kubeconfig (gpu-testbed up passes them)")
	}
	e := New(Options{Region: *region, ClusterName: *cluster, ActiveDelay: *activeDelay, NodeJoinDelay: *joinDelay,
		CapacityReservations: capacity, BlockReclaimLead: lead, RepairMinute: *repairMinute})
	e.dir = *dir
	e.ports = map[string]int{}
	for _, pair := range strings.Split(*portList, ",") {
		name, port, _ := strings.Cut(pair, "=")
		n, err := strconv.Atoi(port)
		if err != nil {
			return fmt.Errorf("--ports: %q is not service=port", pair)
		}
		e.ports[name] = n
	}
	caPEM, err := os.ReadFile(*caFile)
	if err != nil {
		return fmt.Errorf("reading the testbed CA: %w", err)
	}
	e.st.caPEM = caPEM
	e.kube = &lazyKubeconfig{path: *kubeconfig}
	certPEM, err := os.ReadFile(e.webhookCertFile())
	if err != nil {
		return fmt.Errorf("reading the token webhook's certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(e.webhookKeyFile())
	if err != nil {
		return fmt.Errorf("reading the token webhook's key: %w", err)
	}
	listeners, err := e.listen(testbed.KeyPair{CertPEM: certPEM, KeyPEM: keyPEM})
	if err != nil {
		return err
	}
	return e.serve(ctx, log, listeners)
}

// lazyKubeconfig reaches the testbed cluster through its admin
// kubeconfig once the cluster has written it (it starts after the
// emulator).
type lazyKubeconfig struct {
	path    string
	mu      sync.Mutex
	cluster *k8s.Cluster
}

func (l *lazyKubeconfig) get() *k8s.Cluster {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cluster == nil {
		if _, err := os.Stat(l.path); err != nil {
			return nil
		}
		c, err := k8s.Attach(l.path)
		if err != nil {
			return nil
		}
		l.cluster = c
	}
	return l.cluster
}

func (l *lazyKubeconfig) endpoint() string {
	if c := l.get(); c != nil {
		return c.APIServerURL()
	}
	return ""
}

func (l *lazyKubeconfig) addNode(ctx context.Context, spec k8s.NodeSpec) error {
	c := l.get()
	if c == nil {
		return fmt.Errorf("the testbed cluster's kubeconfig %s does not exist yet", l.path)
	}
	return c.AddNode(ctx, spec)
}

func (l *lazyKubeconfig) deleteNode(ctx context.Context, name string) error {
	c := l.get()
	if c == nil {
		return nil
	}
	return c.DeleteNode(ctx, name)
}

func (l *lazyKubeconfig) client() kubernetes.Interface {
	if c := l.get(); c != nil {
		return c.Client()
	}
	return nil
}

// remote reports whether the emulator runs as a process of its own, so
// that the test controls go over HTTP.
func (e *Emulator) remote() bool { return len(e.opts.Command) > 0 }

// mustControl is control for the controls whose signature has no error:
// a test control that fails means the testbed is broken, so it panics.
func (e *Emulator) mustControl(name string, in, out any) {
	if err := e.control(name, in, out); err != nil {
		panic(err)
	}
}

// control calls the test control name on the emulator process (see
// testbed.CallControl).
func (e *Emulator) control(name string, in, out any) error {
	return testbed.CallControl(nil, e.EKSEndpoint(), name, in, out)
}

// capacitySeedsFlag is --capacity-reservations' value: the seeds as JSON.
func capacitySeedsFlag(seeds []CapacityReservationSeed) string {
	if len(seeds) == 0 {
		return ""
	}
	b, err := json.Marshal(seeds)
	if err != nil {
		return ""
	}
	return string(b)
}
