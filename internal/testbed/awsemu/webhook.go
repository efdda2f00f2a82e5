package awsemu

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// The identity EKS gives the cluster creator: the access entry EKS makes
// for it maps it to this user in system:masters.
const (
	adminUsername = "kubernetes-admin"
	adminGroup    = "system:masters"
	tokenPrefix   = "k8s-aws-v1."
	// maxTokenLength is aws-iam-authenticator's bound on a token's length.
	maxTokenLength = 1024 * 4
)

// serveTokenReview is the webhook token authenticator kube-apiserver
// calls with a TokenReview (authentication.k8s.io/v1) for every bearer
// token it does not know: an EKS token authenticates as the cluster
// creator, anything else is refused with the reason.
func (e *Emulator) serveTokenReview(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/authenticate" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var review authenticationv1.TokenReview
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&review); err != nil {
		http.Error(w, "malformed TokenReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	status := authenticationv1.TokenReviewStatus{}
	if err := e.verifyToken(review.Spec.Token, time.Now()); err != nil {
		status.Error = err.Error()
	} else {
		status.Authenticated = true
		status.User = authenticationv1.UserInfo{
			Username: adminUsername,
			UID:      "aws-iam-authenticator:" + AccountID + ":" + CallerUserID,
			Groups:   []string{adminGroup},
			Extra: map[string]authenticationv1.ExtraValue{
				"arn":          {CallerARN},
				"canonicalArn": {CallerARN},
				"accessKeyId":  {AccessKeyID},
				"principalId":  {CallerUserID},
			},
		}
	}
	e.mu.Lock()
	e.st.calls["webhook:TokenReview"]++
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(authenticationv1.TokenReview{
		TypeMeta: review.TypeMeta,
		Status:   status,
	})
}

// verifyToken checks an EKS token: "k8s-aws-v1." and the base64url
// (unpadded) presigned GetCallerIdentity URL (see verifyPresignedURL).
func (e *Emulator) verifyToken(token string, now time.Time) error {
	if len(token) > maxTokenLength {
		return formatError("token is too large")
	}
	encoded, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok {
		return formatError("token is missing expected %q prefix", tokenPrefix)
	}
	raw, err := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil {
		return formatError("%v", err)
	}
	return verifyPresignedURL(string(raw), presignedCheck{
		host:        strings.TrimPrefix(e.STSEndpoint(), "http://"),
		clusterName: e.opts.ClusterName,
		now:         now,
	})
}
