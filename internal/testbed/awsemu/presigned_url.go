package awsemu

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// presignedCheck is what a presigned STS GetCallerIdentity URL must
// satisfy to authenticate (see verifyPresignedURL).
type presignedCheck struct {
	host        string // the emulator's STS endpoint, host:port
	clusterName string // x-k8s-aws-id
	now         time.Time
}

// presignedTokenValidity: STS accepts a presigned GetCallerIdentity URL
// for 15 minutes after its X-Amz-Date whatever X-Amz-Expires says, and
// aws-iam-authenticator checks that bound itself.
const presignedTokenValidity = 15 * time.Minute

// maxPresignedExpires is aws-iam-authenticator's bound on X-Amz-Expires.
const maxPresignedExpires = 900

// presignedParameters are the query parameters aws-iam-authenticator
// allows in a token's URL (its parameterWhitelist), lowercased.
var presignedParameters = map[string]bool{
	"action": true, "version": true, "x-amz-algorithm": true, "x-amz-credential": true, "x-amz-date": true,
	"x-amz-expires": true, "x-amz-security-token": true, "x-amz-signature": true, "x-amz-signedheaders": true,
}

// formatError is how aws-iam-authenticator words a token it refuses
// before asking STS (its FormatError).
func formatError(format string, args ...any) error {
	return fmt.Errorf("input token was not properly formatted: "+format, args...)
}

// verifyPresignedURL checks a token's presigned GetCallerIdentity URL as
// aws-iam-authenticator's server does (pkg/token/token.go, Verify), in its
// order and words: the host, the path "/", no query parameter twice (in
// any case) or outside its whitelist, Action GetCallerIdentity,
// x-k8s-aws-id among the signed headers, X-Amz-Expires within 0..900,
// X-Amz-Date no older than 15 minutes. Where it then sends the URL to STS
// with x-k8s-aws-id set to its cluster ID, the emulator checks what STS
// would: Version, the algorithm and credential scope, the access key, and
// the signature recomputed with the test secret and x-k8s-aws-id set to
// the cluster name, so a token for another cluster fails. Unlike
// aws-iam-authenticator, it takes http: the emulator's STS is plain HTTP.
func verifyPresignedURL(raw string, c presignedCheck) error {
	u, err := url.Parse(raw)
	if err != nil {
		return formatError("%v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return formatError("unexpected scheme %q in pre-signed URL", u.Scheme)
	}
	if u.Host != c.host {
		return formatError("unexpected hostname %q in pre-signed URL", u.Host)
	}
	if u.Path != "/" {
		return formatError("unexpected path in pre-signed URL")
	}
	query, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return formatError("malformed query parameter")
	}
	q := url.Values{} // lowercased keys
	for key, values := range query {
		lower := strings.ToLower(key)
		if _, dup := q[lower]; dup {
			return formatError("duplicate query parameter found: %q", key)
		}
		if !presignedParameters[lower] {
			return formatError("non-whitelisted query parameter %q", key)
		}
		if len(values) != 1 {
			return formatError("query parameter with multiple values not supported")
		}
		q.Set(lower, values[0])
	}
	if q.Get("action") != "GetCallerIdentity" {
		return formatError("unexpected action parameter in pre-signed URL")
	}
	signedHeaders := strings.Split(q.Get("x-amz-signedheaders"), ";")
	if !containsFold(signedHeaders, "x-k8s-aws-id") {
		return formatError("client did not sign the x-k8s-aws-id header in the pre-signed URL")
	}
	expires, err := strconv.Atoi(q.Get("x-amz-expires"))
	if err != nil || expires < 0 || expires > maxPresignedExpires {
		return formatError("invalid X-Amz-Expires parameter in pre-signed URL: %d", expires)
	}
	date := q.Get("x-amz-date")
	if date == "" {
		return formatError("X-Amz-Date parameter must be present in pre-signed URL")
	}
	signedAt, err := time.Parse("20060102T150405Z", date)
	if err != nil {
		return formatError("error parsing X-Amz-Date parameter %s into format 20060102T150405Z: %v", date, err)
	}
	if c.now.After(signedAt.Add(presignedTokenValidity)) {
		return formatError("X-Amz-Date parameter is expired (%.f minute expiration) %s", presignedTokenValidity.Minutes(), signedAt)
	}

	// What STS checks of the GetCallerIdentity call.
	if v := q.Get("version"); v != "2011-06-15" {
		return stsError("InvalidAction", "Could not find operation GetCallerIdentity for version %s", v)
	}
	if signedAt.After(c.now.Add(maxClockSkew)) {
		return stsError("SignatureDoesNotMatch", "Signature not yet current: %s is still later than %s", date, c.now.Add(maxClockSkew).UTC().Format("20060102T150405Z"))
	}
	if q.Get("x-amz-algorithm") != sigV4Algorithm {
		return stsError("IncompleteSignature", "X-Amz-Algorithm must be %s", sigV4Algorithm)
	}
	scope := strings.Split(q.Get("x-amz-credential"), "/")
	if len(scope) != 5 || scope[3] != serviceSTS || scope[4] != "aws4_request" {
		return stsError("IncompleteSignature", "Credential should be scoped correctly")
	}
	if scope[0] != AccessKeyID {
		return stsError("InvalidClientTokenId", "%s", messageInvalidToken)
	}
	if err := checkPresignedSignature(u, query, signedHeaders, scope, signedAt, c.clusterName); err != nil {
		return err
	}
	return nil
}

// checkPresignedSignature presigns the same request with the test
// credentials and compares signatures.
func checkPresignedSignature(u *url.URL, query url.Values, signedHeaders, scope []string, signedAt time.Time, clusterName string) error {
	unsigned := url.Values{}
	var signature string
	for key, values := range query {
		switch strings.ToLower(key) {
		case "x-amz-signature":
			signature = values[0]
		case "x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-signedheaders":
			// The signer sets these.
		default:
			unsigned[key] = values
		}
	}
	replay, err := http.NewRequest(http.MethodGet, u.Scheme+"://"+u.Host+"/?"+unsigned.Encode(), nil)
	if err != nil {
		return err
	}
	for _, name := range signedHeaders {
		switch strings.ToLower(name) {
		case "host":
		case "x-k8s-aws-id":
			replay.Header.Set("x-k8s-aws-id", clusterName)
		default:
			// aws-iam-authenticator sends only x-k8s-aws-id (and accept,
			// which the signature cannot have covered): STS refuses.
			return stsError("SignatureDoesNotMatch", "%s", messageBadSignature)
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
	if subtle.ConstantTimeCompare([]byte(want.Query().Get("X-Amz-Signature")), []byte(signature)) != 1 {
		return stsError("SignatureDoesNotMatch", "%s", messageBadSignature)
	}
	return nil
}

// stsError is how aws-iam-authenticator reports STS refusing the call: the
// status and STS's error document, here its code and message.
func stsError(code, format string, args ...any) error {
	return fmt.Errorf("sts getCallerIdentity failed: error from AWS (expected 200, got 403): %s: %s", code, fmt.Sprintf(format, args...))
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}
