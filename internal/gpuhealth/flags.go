package gpuhealth

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Args is the agent's command line for these settings, the inverse of
// ParseArgs: ["health-agent", "--listen=:9400", "--interval=5s",
// "--damping=1m0s", "--taint=false", "--fatal=a,b", "--expected-gpus=0"].
func (s Settings) Args() []string {
	return []string{
		CommandName,
		"--listen=" + s.Listen,
		"--interval=" + s.SampleInterval.String(),
		"--damping=" + s.Damping.String(),
		"--taint=" + strconv.FormatBool(s.Taint),
		"--fatal=" + (*classList)(&s.Fatal).String(),
		"--expected-gpus=" + strconv.Itoa(s.ExpectedGPUs),
	}
}

// RegisterFlags binds s to the agent's flags in fs, with the defaults of
// DefaultSettings (s is set to them).
func (s *Settings) RegisterFlags(fs *flag.FlagSet) {
	d := DefaultSettings()
	fs.StringVar(&s.Listen, "listen", d.Listen, "address of /metrics and /healthz (host:port)")
	fs.DurationVar(&s.SampleInterval, "interval", d.SampleInterval, "how often to sample NVML")
	fs.DurationVar(&s.Damping, "damping", d.Damping, "shortest time between two changes of the AcceleratedHardwareReady condition (0: publish every change at once)")
	fs.BoolVar(&s.Taint, "taint", d.Taint, "taint the node "+TaintKey+"=<reason>:NoSchedule while a fatal GPU fault stands")
	s.Fatal = d.Fatal
	fs.Var((*classList)(&s.Fatal), "fatal", "comma-separated fault classes that turn the condition False; valid classes are "+classNames(allClasses, ", "))
	fs.IntVar(&s.ExpectedGPUs, "expected-gpus", d.ExpectedGPUs, "how many GPUs the node should have (0: the node label nvidia.com/gpu.count)")
}

// ParseArgs reads the agent's command line (args[0] is CommandName) and
// validates it.
func ParseArgs(args []string) (Settings, error) {
	if len(args) == 0 || args[0] != CommandName {
		return Settings{}, fmt.Errorf("the health agent's command line starts with %q, not %q", CommandName, strings.Join(args, " "))
	}
	var s Settings
	fs := flag.NewFlagSet(CommandName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.RegisterFlags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return Settings{}, fmt.Errorf("%s: %w", CommandName, err)
	}
	if fs.NArg() > 0 {
		return Settings{}, fmt.Errorf("%s takes no arguments, only flags: remove %q", CommandName, strings.Join(fs.Args(), " "))
	}
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// classList is the --fatal flag: fault classes, comma-separated.
type classList []FaultClass

func (l *classList) String() string {
	if l == nil {
		return ""
	}
	return classNames(*l, ",")
}

func (l *classList) Set(v string) error {
	var out []FaultClass
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		c, err := ParseFaultClass(name)
		if err != nil {
			return err
		}
		out = append(out, c)
	}
	*l = out
	return nil
}
