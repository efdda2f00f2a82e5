package awsemu

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// callEach calls one operation of each service and returns the errors.
func callEach(c clients) map[string]error {
	ctx := context.Background()
	_, eksErr := c.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(emu.ClusterName())})
	_, ec2Err := c.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: nil, MaxResults: aws.Int32(5)})
	_, asgErr := c.asg.DescribeTags(ctx, &autoscaling.DescribeTagsInput{})
	_, stsErr := c.sts.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	return map[string]error{"eks": eksErr, "ec2": ec2Err, "autoscaling": asgErr, "sts": stsErr}
}

func TestSignedCallsSucceed(t *testing.T) {
	requireTestbed(t)
	for service, err := range callEach(testClients()) {
		if err != nil {
			t.Errorf("%s: %v", service, err)
		}
	}
}

func TestWrongSecretIsRefusedAsEachServiceRefusesIt(t *testing.T) {
	requireTestbed(t)
	want := map[string]string{"eks": "InvalidSignatureException", "ec2": "AuthFailure", "autoscaling": "SignatureDoesNotMatch", "sts": "SignatureDoesNotMatch"}
	for service, err := range callEach(newClients(sdkConfig("wrong" + SecretAccessKey[5:]))) {
		t.Run(service, func(t *testing.T) { requireAPIError(t, err, want[service]) })
	}
}

func TestUnknownAccessKeyIsRefusedAsEachServiceRefusesIt(t *testing.T) {
	requireTestbed(t)
	cfg := sdkConfig(SecretAccessKey)
	cfg.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIAUNKNOWN000000000", SecretAccessKey: SecretAccessKey}, nil
	})
	want := map[string]string{"eks": "UnrecognizedClientException", "ec2": "AuthFailure", "autoscaling": "InvalidClientTokenId", "sts": "InvalidClientTokenId"}
	for service, err := range callEach(newClients(cfg)) {
		t.Run(service, func(t *testing.T) { requireAPIError(t, err, want[service]) })
	}
}

func TestThrottleNextIsRetriedByTheSDK(t *testing.T) {
	requireTestbed(t)
	emu.ThrottleNext(4)
	want := map[string]string{"eks": "ThrottlingException", "ec2": "RequestLimitExceeded", "autoscaling": "Throttling", "sts": "Throttling"}
	for service, err := range callEach(testClients()) {
		t.Run(service, func(t *testing.T) { requireAPIError(t, err, want[service]) })
	}
	emu.ThrottleNext(3)
	for service, err := range callEach(retryingClients()) {
		if err != nil {
			t.Errorf("%s with the standard retryer: %v", service, err)
		}
	}
}

func TestGetCallerIdentityIsTheTestUser(t *testing.T) {
	requireTestbed(t)
	out, err := testClients().sts.GetCallerIdentity(context.Background(), &sts.GetCallerIdentityInput{})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.Arn) != CallerARN || aws.ToString(out.Account) != AccountID || aws.ToString(out.UserId) != CallerUserID {
		t.Errorf("caller %s %s %s", aws.ToString(out.Arn), aws.ToString(out.Account), aws.ToString(out.UserId))
	}
}

// TestRequestsSignedOutsideTheClockSkewAreRefused signs a request 20
// minutes in the past, beyond the 15 minutes AWS allows.
func TestRequestsSignedOutsideTheClockSkewAreRefused(t *testing.T) {
	requireTestbed(t)
	for _, tc := range []struct {
		service, endpoint, method, path, body, code string
	}{
		{"eks", emu.EKSEndpoint(), http.MethodGet, "/clusters", "", "InvalidSignatureException"},
		{"ec2", emu.EC2Endpoint(), http.MethodPost, "/", "Action=DescribeSubnets&Version=2016-11-15", "RequestExpired"},
		{"sts", emu.STSEndpoint(), http.MethodPost, "/", "Action=GetCallerIdentity&Version=2011-06-15", "SignatureDoesNotMatch"},
	} {
		t.Run(tc.service, func(t *testing.T) {
			for _, skew := range []time.Duration{-20 * time.Minute, 20 * time.Minute, -10 * time.Minute} {
				req, err := http.NewRequest(tc.method, tc.endpoint+tc.path, strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				if tc.body != "" {
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				}
				sum := sha256.Sum256([]byte(tc.body))
				creds := aws.Credentials{AccessKeyID: AccessKeyID, SecretAccessKey: SecretAccessKey}
				if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), tc.service, emu.Region(), time.Now().Add(skew)); err != nil {
					t.Fatal(err)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				inSkew := skew.Abs() < maxClockSkew
				if got := resp.StatusCode == http.StatusOK; got != inSkew {
					t.Errorf("signed %v from now: status %d %s", skew, resp.StatusCode, body)
				}
				if !inSkew && !strings.Contains(string(body)+resp.Header.Get("X-Amzn-ErrorType"), tc.code) {
					t.Errorf("signed %v from now: want %s, got %d %s", skew, tc.code, resp.StatusCode, body)
				}
			}
		})
	}
}
