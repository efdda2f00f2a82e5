package awsemu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed/k8s"
)

// emu and cluster are this package's testbed: the emulator and the
// Kubernetes cluster that is its EKS cluster.
var (
	emu     *Emulator
	cluster *k8s.Cluster
)

// serveEnv makes this test binary the emulator's own process (Serve),
// for the tests of an emulator started with Options.Command.
const serveEnv = "AWSEMU_TEST_SERVE"

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
	e, c := NewWithCluster(Options{ActiveDelay: 300 * time.Millisecond, NodeJoinDelay: 100 * time.Millisecond, RepairMinute: testRepairMinute}, k8s.Options{})
	os.Exit(testbed.Main(m, testbed.Options{Backends: []testbed.Backend{e, c}}, func(*testbed.Testbed) { emu, cluster = e, c }))
}

func requireTestbed(t testing.TB) {
	t.Helper()
	testbed.SkipIfUnavailable(t)
}

// sdkConfig is an SDK configuration with the test credentials (or the
// given secret) and no retries, so that each error is seen as sent.
func sdkConfig(secret string) aws.Config {
	return aws.Config{
		Region: emu.Region(),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: AccessKeyID, SecretAccessKey: secret, Source: "awsemu test"}, nil
		}),
		Retryer: func() aws.Retryer { return aws.NopRetryer{} },
	}
}

type clients struct {
	eks *eks.Client
	ec2 *ec2.Client
	asg *autoscaling.Client
	sts *sts.Client
}

func newClients(cfg aws.Config) clients {
	return clients{
		eks: eks.NewFromConfig(cfg, func(o *eks.Options) { o.BaseEndpoint = aws.String(emu.EKSEndpoint()) }),
		ec2: ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(emu.EC2Endpoint()) }),
		asg: autoscaling.NewFromConfig(cfg, func(o *autoscaling.Options) { o.BaseEndpoint = aws.String(emu.AutoScalingEndpoint()) }),
		sts: sts.NewFromConfig(cfg, func(o *sts.Options) { o.BaseEndpoint = aws.String(emu.STSEndpoint()) }),
	}
}

// testClients are SDK clients signing with the test credentials.
func testClients() clients { return newClients(sdkConfig(SecretAccessKey)) }

// retryingClients retry as the SDK's standard retryer does, with more
// attempts (as internal/eks configures it).
func retryingClients() clients {
	cfg := sdkConfig(SecretAccessKey)
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 10; o.MaxBackoff = time.Second })
	}
	return newClients(cfg)
}

// requireAPIError fails unless err is an AWS API error with that code.
func requireAPIError(t testing.TB, err error, code string) {
	t.Helper()
	apiErrorMessage(t, err, code)
}

// apiErrorMessage is the message of err, which must be an AWS API error
// with that code.
func apiErrorMessage(t testing.TB, err error, code string) string {
	t.Helper()
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("want API error %s, got %v", code, err)
	}
	if apiErr.ErrorCode() != code {
		t.Fatalf("want API error %s, got %s: %s", code, apiErr.ErrorCode(), apiErr.ErrorMessage())
	}
	return apiErr.ErrorMessage()
}

// eventually polls check with backoff until it returns nil or the bound
// passes; the bound is generous, the test does not time anything.
func eventually(t testing.TB, what string, check func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	delay := 20 * time.Millisecond
	for {
		err := check()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, err)
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}
