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
	"slices"
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

// restoreBody puts the body verifySigV4 read back into r.
func restoreBody(r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
}
