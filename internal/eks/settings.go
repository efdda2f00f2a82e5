package eks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// Settings say how to reach AWS. Empty fields take the SDK's defaults
// (environment variables, shared config files, SSO, web identity, IMDS).
type Settings struct {
	Region, Profile string
	// ProfileSetting is how messages name the setting that chooses a
	// profile, e.g. "aws.profile"; empty: "the profile setting".
	ProfileSetting string
	// Endpoints override the service endpoints; an empty field leaves the
	// SDK's default, which reads AWS_ENDPOINT_URL_<SERVICE>.
	Endpoints Endpoints
	// UserAgent ("name/version", e.g. "terraform-provider-gpu/1.2.3") is
	// added to the SDK's User-Agent header.
	UserAgent string
}

// Endpoints are per-service base URLs, e.g. "https://eks.us-west-2.amazonaws.com".
type Endpoints struct{ EKS, EC2, AutoScaling, STS string }

// ErrNoRegion is Connect's error when neither the settings, nor
// AWS_REGION / AWS_DEFAULT_REGION, nor the profile name a region.
var ErrNoRegion = errors.New("no AWS region: none is given, and neither AWS_REGION (nor AWS_DEFAULT_REGION) nor the profile's region is set")

// Retry policy: throttling (ThrottlingException, RequestLimitExceeded) and
// transient errors are retried by the SDK's standard retryer, with more
// attempts than its default 3 so a busy account's rate limits are survived.
const (
	retryMaxAttempts = 10
	retryMaxBackoff  = 20 * time.Second
)

// Client is a connection to one AWS account and region. It is safe for
// concurrent use and caches DescribeInstanceTypes answers for its lifetime.
type Client struct {
	region string
	eks    *awseks.Client
	ec2    *ec2.Client
	asg    *autoscaling.Client
	sts    *sts.Client

	instanceTypesMu sync.Mutex
	instanceTypes   map[string]InstanceType // name -> facts, filled by InstanceTypes
}

// Connect loads the SDK's default configuration with these settings. It calls
// no AWS API: missing or wrong credentials surface at the first call.
func (s Settings) Connect(ctx context.Context) (*Client, error) {
	var opts []func(*config.LoadOptions) error
	if s.Region != "" {
		opts = append(opts, config.WithRegion(s.Region))
	}
	if s.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(s.Profile))
	}
	opts = append(opts, config.WithRetryer(func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = retryMaxAttempts
			o.MaxBackoff = retryMaxBackoff
		})
	}))
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	var noProfile config.SharedConfigProfileNotExistError
	if errors.As(err, &noProfile) {
		o := newCredentialsOrigin(s, nil, osGetenv)
		return nil, fmt.Errorf("loading the AWS configuration: %s is in neither %s nor %s: "+
			"add it to one of them (`aws configure --profile %s`), or choose another profile with %s or %s: %w",
			o.profilePhrase(), o.credentialsFile, o.configFile, o.profile, o.profileSetting, envProfile, err)
	}
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration (region, profile, credentials): %w", err)
	}
	if cfg.Region == "" {
		return nil, ErrNoRegion
	}
	origin := newCredentialsOrigin(s, cfg.Credentials, osGetenv)
	if cfg.Credentials != nil {
		cfg.Credentials = markUnavailable{cfg.Credentials}
	}
	cfg.APIOptions = append(cfg.APIOptions, logCalls, explainCredentials(origin))
	if s.UserAgent != "" {
		// "name/version" goes as such into the User-Agent header, after the SDK's own.
		name, version, _ := strings.Cut(s.UserAgent, "/")
		cfg.APIOptions = append(cfg.APIOptions, awsmiddleware.AddUserAgentKeyValue(name, version))
	}
	return &Client{
		region: cfg.Region,
		eks: awseks.NewFromConfig(cfg, func(o *awseks.Options) {
			if s.Endpoints.EKS != "" {
				o.BaseEndpoint = aws.String(s.Endpoints.EKS)
			}
		}),
		ec2: ec2.NewFromConfig(cfg, func(o *ec2.Options) {
			if s.Endpoints.EC2 != "" {
				o.BaseEndpoint = aws.String(s.Endpoints.EC2)
			}
		}),
		asg: autoscaling.NewFromConfig(cfg, func(o *autoscaling.Options) {
			if s.Endpoints.AutoScaling != "" {
				o.BaseEndpoint = aws.String(s.Endpoints.AutoScaling)
			}
		}),
		sts: sts.NewFromConfig(cfg, func(o *sts.Options) {
			if s.Endpoints.STS != "" {
				o.BaseEndpoint = aws.String(s.Endpoints.STS)
			}
		}),
		instanceTypes: map[string]InstanceType{},
	}, nil
}

// Region is the region the client calls.
func (c *Client) Region() string { return c.region }
