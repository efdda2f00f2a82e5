package eks

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// An EKS bearer token is a presigned STS GetCallerIdentity URL, as
// aws-iam-authenticator's pkg/token (and `aws eks get-token`) mint it: the
// cluster's name rides in the signed header x-k8s-aws-id, X-Amz-Expires is 60
// (STS ignores it; old authenticators check it is at most 60), and the URL is
// base64url-encoded without padding behind "k8s-aws-v1.". The authenticator
// accepts it for 15 minutes after its X-Amz-Date.
const (
	tokenPrefix          = "k8s-aws-v1."
	tokenClusterIDHeader = "x-k8s-aws-id"
	tokenPresignExpires  = "60"
	tokenValidity        = 15 * time.Minute
	tokenRefreshMargin   = 1 * time.Minute
)

// TokenSource mints EKS bearer tokens for one cluster with the Client's
// credentials and STS endpoint. It caches a token and mints a new one a
// minute before the old one's 15 minutes are up. Safe for concurrent use.
type TokenSource struct {
	clusterName string
	region      string
	presign     *sts.PresignClient
	now         func() time.Time

	mu     sync.Mutex
	token  string
	expiry time.Time
}

// newTokenSource returns a source of bearer tokens for the named EKS cluster.
func (c *Client) newTokenSource(clusterName string) *TokenSource {
	return &TokenSource{
		clusterName: clusterName,
		region:      c.region,
		presign:     sts.NewPresignClient(c.sts),
		now:         time.Now,
	}
}

// String describes the tokens (never a token), for error messages.
func (s *TokenSource) String() string {
	return fmt.Sprintf("EKS token for cluster %q in %s", s.clusterName, s.region)
}

// Token returns a valid token and the time it should be replaced by (a minute
// before the authenticator would refuse it).
func (s *TokenSource) Token(ctx context.Context) (string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != "" && s.now().Before(s.expiry) {
		return s.token, s.expiry, nil
	}
	signedAt := s.now()
	req, err := s.presign.PresignGetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}, func(o *sts.PresignOptions) {
		o.ClientOptions = append(o.ClientOptions, func(o *sts.Options) {
			o.APIOptions = append(o.APIOptions, addClusterIDHeader(s.clusterName))
		})
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("minting an EKS token for cluster %q (presigning sts:GetCallerIdentity with the AWS credentials): %w", s.clusterName, err)
	}
	s.token = tokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(req.URL))
	s.expiry = signedAt.Add(tokenValidity - tokenRefreshMargin)
	return s.token, s.expiry, nil
}

// addClusterIDHeader adds, before signing, the x-k8s-aws-id header (so it is
// signed) and X-Amz-Expires=60 to the presigned request.
func addClusterIDHeader(clusterName string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Build.Add(middleware.BuildMiddlewareFunc("EKSTokenClusterID",
			func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
				if req, ok := in.Request.(*smithyhttp.Request); ok {
					req.Header.Add(tokenClusterIDHeader, clusterName)
					q := req.URL.Query()
					q.Set("X-Amz-Expires", tokenPresignExpires)
					req.URL.RawQuery = q.Encode()
				}
				return next.HandleBuild(ctx, in)
			}), middleware.After)
	}
}
