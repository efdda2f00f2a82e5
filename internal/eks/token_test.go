package eks

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/stretchr/testify/require"
)

const (
	testAccessKeyID     = "AKIAEKSTOKENTEST0001"
	testSecretAccessKey = "eksTokenTestSecretKey0000000000000000000"
	emptySHA256         = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// testClient connects with static test credentials from the environment and
// no shared files, so no user's ~/.aws mixes in.
func testClient(t *testing.T, s Settings) *Client {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", testAccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testSecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL_STS", "")
	c, err := s.Connect(context.Background())
	require.NoError(t, err)
	return c
}

// decodeToken returns the presigned URL inside an EKS token.
func decodeToken(t *testing.T, token string) *url.URL {
	t.Helper()
	encoded, ok := strings.CutPrefix(token, "k8s-aws-v1.")
	require.True(t, ok, "an EKS token starts with k8s-aws-v1.")
	require.NotContains(t, encoded, "=", "base64url without padding")
	raw, err := base64.RawURLEncoding.DecodeString(encoded)
	require.NoError(t, err)
	u, err := url.Parse(string(raw))
	require.NoError(t, err)
	return u
}

func TestTokenIsAPresignedGetCallerIdentityForTheCluster(t *testing.T) {
	c := testClient(t, Settings{Region: "us-west-2"})
	token, expiry, err := c.newTokenSource("prod").Token(context.Background())
	require.NoError(t, err)

	u := decodeToken(t, token)
	require.Equal(t, "https", u.Scheme)
	require.Equal(t, "sts.us-west-2.amazonaws.com", u.Host, "the regional STS endpoint, as aws-iam-authenticator verifies")
	q := u.Query()
	require.Equal(t, "GetCallerIdentity", q.Get("Action"))
	require.Equal(t, "2011-06-15", q.Get("Version"))
	require.Equal(t, "60", q.Get("X-Amz-Expires"))
	require.Equal(t, "AWS4-HMAC-SHA256", q.Get("X-Amz-Algorithm"))
	require.Equal(t, "host;x-k8s-aws-id", q.Get("X-Amz-SignedHeaders"), "the cluster's name is a signed header")
	require.Regexp(t, `^`+testAccessKeyID+`/\d{8}/us-west-2/sts/aws4_request$`, q.Get("X-Amz-Credential"))
	require.NotContains(t, token, testSecretAccessKey)

	signedAt, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	require.NoError(t, err)
	require.WithinRange(t, expiry, signedAt.Add(14*time.Minute-time.Second), signedAt.Add(14*time.Minute+2*time.Second),
		"replaced a minute before the 15 minutes STS accepts it")

	// The signature covers X-Amz-Expires and the x-k8s-aws-id header: signing
	// the same request again, with the cluster's name, gives the same one.
	unsigned := *u
	uq := u.Query()
	for _, k := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-SignedHeaders", "X-Amz-Signature"} {
		uq.Del(k)
	}
	unsigned.RawQuery = uq.Encode()
	req, err := http.NewRequest(http.MethodGet, unsigned.String(), nil)
	require.NoError(t, err)
	req.Header.Set("x-k8s-aws-id", "prod")
	again, _, err := v4.NewSigner().PresignHTTP(context.Background(),
		aws.Credentials{AccessKeyID: testAccessKeyID, SecretAccessKey: testSecretAccessKey}, req, emptySHA256, "sts", "us-west-2", signedAt)
	require.NoError(t, err)
	againURL, err := url.Parse(again)
	require.NoError(t, err)
	require.Equal(t, q.Get("X-Amz-Signature"), againURL.Query().Get("X-Amz-Signature"))

	req.Header.Set("x-k8s-aws-id", "other")
	other, _, err := v4.NewSigner().PresignHTTP(context.Background(),
		aws.Credentials{AccessKeyID: testAccessKeyID, SecretAccessKey: testSecretAccessKey}, req, emptySHA256, "sts", "us-west-2", signedAt)
	require.NoError(t, err)
	otherURL, err := url.Parse(other)
	require.NoError(t, err)
	require.NotEqual(t, q.Get("X-Amz-Signature"), otherURL.Query().Get("X-Amz-Signature"), "the token is bound to its cluster")
}

func TestTokenUsesTheSTSEndpoint(t *testing.T) {
	c := testClient(t, Settings{Region: "eu-central-1", Endpoints: Endpoints{STS: "http://127.0.0.1:4566"}})
	token, _, err := c.newTokenSource("prod").Token(context.Background())
	require.NoError(t, err)
	u := decodeToken(t, token)
	require.Equal(t, "http://127.0.0.1:4566", u.Scheme+"://"+u.Host)
	require.Contains(t, u.Query().Get("X-Amz-Credential"), "/eu-central-1/sts/aws4_request")
}

func TestTokenIsCachedUntilAMinuteBeforeItExpires(t *testing.T) {
	c := testClient(t, Settings{Region: "us-west-2"})
	s := c.newTokenSource("prod")
	now := time.Now()
	s.now = func() time.Time { return now }

	first, firstExpiry, err := s.Token(context.Background())
	require.NoError(t, err)
	require.Equal(t, now.Add(14*time.Minute), firstExpiry)

	now = now.Add(13 * time.Minute)
	cached, cachedExpiry, err := s.Token(context.Background())
	require.NoError(t, err)
	require.Equal(t, first, cached)
	require.Equal(t, firstExpiry, cachedExpiry)

	now = now.Add(time.Minute)
	_, renewedExpiry, err := s.Token(context.Background())
	require.NoError(t, err)
	require.Equal(t, now.Add(14*time.Minute), renewedExpiry, "a new token is minted once the old one is due")
}

func TestTokenSourceDescribesItselfWithoutTheToken(t *testing.T) {
	c := testClient(t, Settings{Region: "us-west-2"})
	require.Equal(t, `EKS token for cluster "prod" in us-west-2`, c.newTokenSource("prod").String())
}
