package awsemu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// maxClockSkew is how far a request's X-Amz-Date may be from the
// emulator's clock, as AWS allows.
const maxClockSkew = 15 * time.Minute

const sigV4Algorithm = "AWS4-HMAC-SHA256"

// sigV4Auth is the parsed Authorization header of a SigV4 request.
type sigV4Auth struct {
	accessKeyID, date, region, service string
	signedHeaders                      []string
	signature                          string
}

// parseAuthorization parses the header; the problem, as AWS words it,
// if it is malformed.
func parseAuthorization(header string) (sigV4Auth, string) {
	rest, ok := strings.CutPrefix(header, sigV4Algorithm+" ")
	if !ok {
		return sigV4Auth{}, "Authorization header requires the " + sigV4Algorithm + " algorithm"
	}
	var a sigV4Auth
	for _, part := range strings.Split(rest, ",") {
		key, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch key {
		case "Credential":
			scope := strings.Split(value, "/")
			if len(scope) != 5 || scope[4] != "aws4_request" {
				return sigV4Auth{}, fmt.Sprintf("Credential should be scoped correctly, not %q", value)
			}
			a.accessKeyID, a.date, a.region, a.service = scope[0], scope[1], scope[2], scope[3]
		case "SignedHeaders":
			a.signedHeaders = strings.Split(value, ";")
		case "Signature":
			a.signature = value
		}
	}
	if a.accessKeyID == "" || len(a.signedHeaders) == 0 || a.signature == "" {
		return sigV4Auth{}, "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters"
	}
	return a, ""
}

// verifySigV4 checks r's signature against the test credentials by
// signing a copy of r, made of the headers r says it signed, with the
// SDK's own signer, at r's date, with r's payload hash. It returns the
// body, which it has read.
func verifySigV4(r *http.Request, service, region string, now time.Time) ([]byte, *apiError) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		return nil, newError(http.StatusBadRequest, "InvalidRequest", "reading the request body: %v", err)
	}
	header := r.Header.Get("Authorization")
	if header == "" {
		return body, errMissingAuth(service)
	}
	auth, problem := parseAuthorization(header)
	if problem != "" {
		if service == serviceEC2 {
			return body, newError(http.StatusUnauthorized, "AuthFailure", messageEC2Auth)
		}
		return body, newError(http.StatusBadRequest, "IncompleteSignature", "%s", problem)
	}
	if auth.accessKeyID != AccessKeyID {
		return body, errUnknownKey(service)
	}
	if auth.service != service {
		return body, errSignature(service, fmt.Sprintf("Credential should be scoped to correct service: '%s'.", service))
	}
	if service != serviceSTS && auth.region != region {
		return body, errSignature(service, fmt.Sprintf("Credential should be scoped to a valid region, not '%s'.", auth.region))
	}
	amzDate := r.Header.Get("X-Amz-Date")
	signedAt, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil {
		return body, errSignature(service, "X-Amz-Date header is missing or malformed")
	}
	if skew := now.Sub(signedAt); skew > maxClockSkew || skew < -maxClockSkew {
		return body, errSignatureExpired(service, fmt.Sprintf("Signature expired: %s is now earlier than %s (%s - 15 min.)",
			amzDate, now.Add(-maxClockSkew).UTC().Format("20060102T150405Z"), now.UTC().Format("20060102T150405Z")))
	}
	payloadHash := r.Header.Get("X-Amz-Content-Sha256")
	if payloadHash == "" {
		sum := sha256.Sum256(body)
		payloadHash = hex.EncodeToString(sum[:])
	}

	replay, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), nil)
	if err != nil {
		return body, errSignature(service, messageBadSignature)
	}
	replay.Host = r.Host
	for _, name := range auth.signedHeaders {
		switch name {
		case "host":
		case "content-length":
			replay.ContentLength = r.ContentLength
		default:
			replay.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
	if !slices.Contains(auth.signedHeaders, "content-length") {
		replay.ContentLength = 0
	}
	creds := aws.Credentials{AccessKeyID: AccessKeyID, SecretAccessKey: SecretAccessKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, replay, payloadHash, auth.service, auth.region, signedAt); err != nil {
		return body, errSignature(service, messageBadSignature)
	}
	want, problem := parseAuthorization(replay.Header.Get("Authorization"))
	if problem != "" || subtle.ConstantTimeCompare([]byte(want.signature), []byte(auth.signature)) != 1 {
		return body, errSignature(service, messageBadSignature)
	}
	return body, nil
}

// presignedCheck is what a presigned STS GetCallerIdentity URL must
// satisfy to authenticate (see verifyPresignedURL).
type presignedCheck struct {
	host        string // the emulator's STS endpoint, host:port
	clusterName string // x-k8s-aws-id
	now         time.Time
}

// maxPresignedExpiry is aws-iam-authenticator's bound on X-Amz-Expires
// (pkg/token/token.go: tokens are valid 15 minutes whatever it says).
const presignedTokenValidity = 15 * time.Minute

// verifyPresignedURL checks a presigned GetCallerIdentity URL as
// aws-iam-authenticator's server does (pkg/token/token.go, Verify): the
// host, the action and version, the presigning parameters, x-k8s-aws-id
// among the signed headers, a date no older than 15 minutes; and, as STS
// would, the signature against the test secret with x-k8s-aws-id set to
// the cluster name.
func verifyPresignedURL(raw string, c presignedCheck) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("malformed presigned URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("unexpected scheme %q in presigned URL", u.Scheme)
	}
	if u.Host != c.host {
		return fmt.Errorf("unexpected hostname %q in presigned URL (want the STS endpoint %s)", u.Host, c.host)
	}
	if u.Path != "/" && u.Path != "" {
		return fmt.Errorf("unexpected path %q in presigned URL", u.Path)
	}
	q := u.Query()
	for key, values := range q {
		if len(values) != 1 {
			return fmt.Errorf("query parameter %s appears %d times", key, len(values))
		}
	}
	if q.Get("Action") != "GetCallerIdentity" {
		return fmt.Errorf("unexpected action parameter %q in presigned URL", q.Get("Action"))
	}
	if q.Get("Version") != "2011-06-15" {
		return fmt.Errorf("unexpected version parameter %q in presigned URL", q.Get("Version"))
	}
	if q.Get("X-Amz-Algorithm") != sigV4Algorithm {
		return fmt.Errorf("X-Amz-Algorithm must be %s", sigV4Algorithm)
	}
	signedHeaders := strings.Split(q.Get("X-Amz-SignedHeaders"), ";")
	if !slices.Contains(signedHeaders, "x-k8s-aws-id") {
		return fmt.Errorf("client did not sign the x-k8s-aws-id header in the presigned URL")
	}
	expires, err := strconv.Atoi(q.Get("X-Amz-Expires"))
	if err != nil || expires <= 0 {
		return fmt.Errorf("X-Amz-Expires is missing or malformed")
	}
	signedAt, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("X-Amz-Date is missing or malformed")
	}
	if c.now.After(signedAt.Add(presignedTokenValidity)) {
		return fmt.Errorf("X-Amz-Date parameter is expired (%.f minute expiration) %s", presignedTokenValidity.Minutes(), signedAt.Format(time.RFC3339))
	}
	if signedAt.After(c.now.Add(maxClockSkew)) {
		return fmt.Errorf("X-Amz-Date parameter is in the future: %s", signedAt.Format(time.RFC3339))
	}
	scope := strings.Split(q.Get("X-Amz-Credential"), "/")
	if len(scope) != 5 || scope[3] != serviceSTS || scope[4] != "aws4_request" {
		return fmt.Errorf("X-Amz-Credential is malformed")
	}
	if scope[0] != AccessKeyID {
		return fmt.Errorf("STS: InvalidClientTokenId: %s", messageInvalidToken)
	}

	// Re-sign without the signature parameters, which the signer adds.
	unsigned := url.Values{}
	for key, values := range q {
		switch key {
		case "X-Amz-Signature", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-SignedHeaders":
		default:
			unsigned[key] = values
		}
	}
	replay, err := http.NewRequest(http.MethodGet, u.Scheme+"://"+u.Host+"/?"+unsigned.Encode(), nil)
	if err != nil {
		return err
	}
	for _, name := range signedHeaders {
		switch name {
		case "host":
		case "x-k8s-aws-id":
			replay.Header.Set("x-k8s-aws-id", c.clusterName)
		default:
			return fmt.Errorf("the presigned URL signs header %q, which a token cannot carry", name)
		}
	}
	creds := aws.Credentials{AccessKeyID: AccessKeyID, SecretAccessKey: SecretAccessKey}
	const emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	signedURL, _, err := v4.NewSigner().PresignHTTP(context.Background(), creds, replay, emptyPayloadHash, scope[3], scope[2], signedAt)
	if err != nil {
		return err
	}
	want, err := url.Parse(signedURL)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(want.Query().Get("X-Amz-Signature")), []byte(q.Get("X-Amz-Signature"))) != 1 {
		// STS answers the GetCallerIdentity call with this; a token for
		// another cluster fails here too, since x-k8s-aws-id is signed.
		return fmt.Errorf("STS: SignatureDoesNotMatch: %s", messageBadSignature)
	}
	return nil
}

// restoreBody puts the body verifySigV4 read back into r.
func restoreBody(r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
}
