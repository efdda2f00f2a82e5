package eks

// This file turns a call that failed for the Client's credentials into an
// error that names the setting to fix: AWS's refusal of an access key it
// does not know, of a signature made with the wrong secret, or of an
// expired session token, and a chain that found no credentials at all
// (the SDK's "no EC2 IMDS role found"). Which credentials were in use
// comes from the Client's origin (credentials_origin.go); no message holds
// a secret.

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// CredentialsError is an AWS call that failed because of the Client's
// credentials, not because AWS is unreachable or refused the request
// itself. Its text reads, e.g.:
//
//	AWS rejected the credentials (EC2 DescribeInstanceTypes: AuthFailure): the access key ID is unknown, or the secret access key does not match it; in use: access key ID ****MPLE and secret access key from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (the environment). Fix AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; or unset them to use a profile of ~/.aws/credentials or ~/.aws/config. (AWS's error)
type CredentialsError struct {
	// Problem says what happened.
	Problem string
	// InUse says which credentials were in use and where they came from.
	InUse string
	// Fix names the setting to change.
	Fix string
	// Alternative is another way out; may be empty.
	Alternative string
	// Err is the SDK's error.
	Err error
}

// Error reads "<problem>; in use: <credentials>. Fix <fix>[; <alternative>]. (<SDK error>)".
func (e *CredentialsError) Error() string {
	msg := e.Problem + "; in use: " + e.InUse + ". Fix " + strings.TrimSuffix(e.Fix, ".")
	if e.Alternative != "" {
		msg += "; " + e.Alternative
	}
	return msg + ". (" + e.Err.Error() + ")"
}

// Unwrap returns the SDK's error: its API error code still reads through.
func (e *CredentialsError) Unwrap() error { return e.Err }

// rejections are the error codes with which AWS refuses a request's
// credentials, as each service's Common Errors list them (EC2's
// AuthFailure; EKS's UnrecognizedClientException and
// InvalidSignatureException; STS's and Auto Scaling's InvalidClientTokenId
// and SignatureDoesNotMatch), with what each means.
var rejections = map[string]string{
	"AuthFailure":                         "the access key ID is unknown, or the secret access key does not match it",
	"UnrecognizedClientException":         "AWS does not know the access key ID",
	"InvalidClientTokenId":                "AWS does not know the access key ID",
	"InvalidSignatureException":           "the signature does not match: the secret access key is not the access key ID's (or this machine's clock is more than 15 minutes off)",
	"SignatureDoesNotMatch":               "the signature does not match: the secret access key is not the access key ID's (or this machine's clock is more than 15 minutes off)",
	"ExpiredToken":                        "the session token has expired: get new temporary credentials",
	"ExpiredTokenException":               "the session token has expired: get new temporary credentials",
	"IncompleteSignature":                 "the request carried no complete signature",
	"MissingAuthenticationToken":          "the request carried no credentials",
	"MissingAuthenticationTokenException": "the request carried no credentials",
}

// explain is err as a *CredentialsError when the credentials caused it (op
// names the call, e.g. "EKS DescribeNodegroup"), nil otherwise.
func (o credentialsOrigin) explain(ctx context.Context, op string, err error) *CredentialsError {
	var unavailable *credentialsUnavailableError
	var problem string
	switch {
	case errors.As(err, &unavailable):
		problem = "the AWS credentials could not be obtained for " + op
		if o.has(aws.CredentialSourceIMDS) {
			problem = "no AWS credentials were found for " + op
		}
	default:
		code := apiErrorCode(err)
		meaning, ok := rejections[code]
		if !ok {
			return nil
		}
		problem = "AWS rejected the credentials (" + op + ": " + code + "): " + meaning
	}
	use, fix, alternative := o.describe(ctx)
	return &CredentialsError{Problem: problem, InUse: use, Fix: fix, Alternative: alternative, Err: err}
}

// explainCredentials is an SDK API option that turns an operation's
// credentials failure into a *CredentialsError.
func explainCredentials(o credentialsOrigin) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("GPUProviderExplainCredentials",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				if err != nil {
					if explained := o.explain(ctx, awsmiddleware.GetServiceID(ctx)+" "+awsmiddleware.GetOperationName(ctx), err); explained != nil {
						err = explained
					}
				}
				return out, md, err
			}), middleware.After)
	}
}

// credentialsUnavailableError is the chain's failure to produce
// credentials, marked so that explain knows it from a network error.
type credentialsUnavailableError struct{ err error }

func (e *credentialsUnavailableError) Error() string { return e.err.Error() }
func (e *credentialsUnavailableError) Unwrap() error { return e.err }

// markUnavailable wraps the SDK's credentials provider (its cache) so
// that a failure to retrieve credentials is marked; everything else goes
// through.
type markUnavailable struct{ aws.CredentialsProvider }

func (p markUnavailable) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := p.CredentialsProvider.Retrieve(ctx)
	if err != nil && ctx.Err() == nil {
		err = &credentialsUnavailableError{err}
	}
	return c, err
}

// ProviderSources is the wrapped chain's.
func (p markUnavailable) ProviderSources() []aws.CredentialSource {
	if s, ok := p.CredentialsProvider.(interface{ ProviderSources() []aws.CredentialSource }); ok {
		return s.ProviderSources()
	}
	return nil
}

// IsCredentialsProvider lets the SDK see the cache inside, as it checks
// for one before adding its own.
func (p markUnavailable) IsCredentialsProvider(target aws.CredentialsProvider) bool {
	return aws.IsCredentialsProvider(p.CredentialsProvider, target)
}
