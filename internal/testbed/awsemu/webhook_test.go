package awsemu

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mintToken makes an EKS token as aws-iam-authenticator and `aws eks
// get-token` do: a GetCallerIdentity URL presigned for 60 seconds with
// x-k8s-aws-id signed.
func mintToken(t *testing.T, secret, clusterName string, signedAt time.Time) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, emu.STSEndpoint()+"/?Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Expires=60", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-k8s-aws-id", clusterName)
	creds := aws.Credentials{AccessKeyID: AccessKeyID, SecretAccessKey: secret}
	const emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	url, _, err := v4.NewSigner().PresignHTTP(context.Background(), creds, req, emptyPayloadHash, "sts", emu.Region(), signedAt)
	if err != nil {
		t.Fatal(err)
	}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(url))
}

// listNodesWithToken lists nodes as the bearer of token.
func listNodesWithToken(t *testing.T, token string) error {
	t.Helper()
	client, err := cluster.ClientWithToken(token)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	return err
}

func TestKubeAPIServerAcceptsEKSTokens(t *testing.T) {
	requireTestbed(t)
	token := mintToken(t, SecretAccessKey, emu.ClusterName(), time.Now())
	if err := listNodesWithToken(t, token); err != nil {
		t.Fatalf("listing nodes with an EKS token: %v", err)
	}
}

func TestKubeAPIServerRefusesBadEKSTokens(t *testing.T) {
	requireTestbed(t)
	for _, tc := range []struct {
		description string
		token       string
	}{
		{"signed with a wrong secret", mintToken(t, "wrong"+SecretAccessKey[5:], emu.ClusterName(), time.Now())},
		{"for another cluster", mintToken(t, SecretAccessKey, "another-cluster", time.Now())},
		{"older than 15 minutes", mintToken(t, SecretAccessKey, emu.ClusterName(), time.Now().Add(-16*time.Minute))},
		{"not an EKS token", "k8s-aws-v2.aHR0cDovL2V4YW1wbGU"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			err := listNodesWithToken(t, tc.token)
			if !apierrors.IsUnauthorized(err) {
				t.Fatalf("want 401 Unauthorized, got %v", err)
			}
		})
	}
}

func TestVerifyTokenSaysWhy(t *testing.T) {
	requireTestbed(t)
	now := time.Now()
	for _, tc := range []struct {
		description, token, want string
	}{
		{"a wrong secret", mintToken(t, "wrong"+SecretAccessKey[5:], emu.ClusterName(), now), "SignatureDoesNotMatch"},
		{"an expired token", mintToken(t, SecretAccessKey, emu.ClusterName(), now.Add(-16*time.Minute)), "expired"},
		{"no prefix", "abc", `missing expected "k8s-aws-v1." prefix`},
		{"bad base64", tokenPrefix + "!!", "illegal base64"},
		{"another host", tokenPrefix + base64.RawURLEncoding.EncodeToString([]byte("https://sts.amazonaws.com/?Action=GetCallerIdentity")), "unexpected hostname"},
		{"x-k8s-aws-id not signed", presignedWithout(t, "X-Amz-SignedHeaders", "host"), "did not sign the x-k8s-aws-id header"},
		{"an unknown parameter", presignedWithout(t, "Extra", "1"), `non-whitelisted query parameter "Extra"`},
		{"X-Amz-Expires over 900", presignedWithout(t, "X-Amz-Expires", "901"), "invalid X-Amz-Expires"},
	} {
		t.Run(tc.description, func(t *testing.T) {
			err := emu.verifyToken(tc.token, now)
			if err == nil || !contains(err.Error(), tc.want) {
				t.Fatalf("want an error saying %q, got %v", tc.want, err)
			}
		})
	}
}

// presignedWithout is a valid token whose URL has the query parameter key
// set to value.
func presignedWithout(t *testing.T, key, value string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(mintToken(t, SecretAccessKey, emu.ClusterName(), time.Now())[len(tokenPrefix):])
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return tokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(u.String()))
}
