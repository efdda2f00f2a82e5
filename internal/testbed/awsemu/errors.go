package awsemu

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"sync/atomic"
)

// apiError is an error as a service sends it: HTTP status, error code and
// message.
type apiError struct {
	status  int
	code    string
	message string
	// fields are members EKS adds to an error's body beside "message"
	// (clusterName, nodegroupName: ResourceNotFoundException and
	// ResourceInUseException carry them).
	fields map[string]string
}

// with adds EKS error body members.
func (e *apiError) with(fields map[string]string) *apiError {
	e.fields = fields
	return e
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func newError(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// requestIDs numbers responses; each carries one, as AWS's do.
var requestIDs atomic.Uint64

func nextRequestID() string {
	n := requestIDs.Add(1)
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
}

// writeError renders err in the service's wire format:
//   - EKS (REST-JSON): the code in the X-Amzn-ErrorType header, the
//     message in the body's "message" member;
//   - EC2 (EC2 query): <Response><Errors><Error><Code/><Message/>...;
//   - Auto Scaling and STS (AWS query): <ErrorResponse><Error><Type/><Code/><Message/>....
func writeError(w http.ResponseWriter, service string, err *apiError) {
	id := nextRequestID()
	switch service {
	case serviceEKS:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", err.code)
		w.Header().Set("X-Amzn-RequestId", id)
		w.WriteHeader(err.status)
		body := map[string]string{"message": err.message}
		for k, v := range err.fields {
			body[k] = v
		}
		_ = json.NewEncoder(w).Encode(body)
	case serviceEC2:
		w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
		w.WriteHeader(err.status)
		body := struct {
			XMLName   xml.Name `xml:"Response"`
			Code      string   `xml:"Errors>Error>Code"`
			Message   string   `xml:"Errors>Error>Message"`
			RequestID string   `xml:"RequestID"`
		}{Code: err.code, Message: err.message, RequestID: id}
		writeXMLBody(w, body)
	default:
		w.Header().Set("Content-Type", "text/xml")
		w.Header().Set("X-Amzn-RequestId", id)
		w.WriteHeader(err.status)
		kind := "Sender"
		if err.status >= 500 {
			kind = "Receiver"
		}
		body := struct {
			XMLName   xml.Name `xml:"ErrorResponse"`
			XMLNS     string   `xml:"xmlns,attr"`
			Type      string   `xml:"Error>Type"`
			Code      string   `xml:"Error>Code"`
			Message   string   `xml:"Error>Message"`
			RequestID string   `xml:"RequestId"`
		}{XMLNS: queryNamespace(service), Type: kind, Code: err.code, Message: err.message, RequestID: id}
		writeXMLBody(w, body)
	}
}

func writeXMLBody(w http.ResponseWriter, v any) {
	_, _ = w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(w).Encode(v)
}

// queryNamespace is the XML namespace of an AWS query service's documents.
func queryNamespace(service string) string {
	switch service {
	case serviceEC2:
		return "http://ec2.amazonaws.com/doc/2016-11-15/"
	case serviceAutoScaling:
		return "http://autoscaling.amazonaws.com/doc/2011-01-01/"
	default:
		return "https://sts.amazonaws.com/doc/2011-06-15/"
	}
}

// Authentication errors, per service, as AWS returns them.
const (
	messageBadSignature = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	messageInvalidToken = "The security token included in the request is invalid."
	messageEC2Auth      = "AWS was not able to validate the provided access credentials"
)

func errMissingAuth(service string) *apiError {
	switch service {
	case serviceEKS:
		return newError(http.StatusForbidden, "MissingAuthenticationTokenException", "Missing Authentication Token")
	case serviceEC2:
		return newError(http.StatusUnauthorized, "AuthFailure", messageEC2Auth)
	default:
		return newError(http.StatusForbidden, "MissingAuthenticationToken", "Request is missing Authentication Token")
	}
}

func errUnknownKey(service string) *apiError {
	switch service {
	case serviceEKS:
		return newError(http.StatusForbidden, "UnrecognizedClientException", messageInvalidToken)
	case serviceEC2:
		return newError(http.StatusUnauthorized, "AuthFailure", messageEC2Auth)
	default:
		return newError(http.StatusForbidden, "InvalidClientTokenId", messageInvalidToken)
	}
}

func errSignature(service, message string) *apiError {
	switch service {
	case serviceEKS:
		return newError(http.StatusForbidden, "InvalidSignatureException", "%s", message)
	case serviceEC2:
		return newError(http.StatusUnauthorized, "AuthFailure", messageEC2Auth)
	default:
		return newError(http.StatusForbidden, "SignatureDoesNotMatch", "%s", message)
	}
}

func errSignatureExpired(service, message string) *apiError {
	if service == serviceEC2 {
		return newError(http.StatusBadRequest, "RequestExpired", "Request has expired.")
	}
	return errSignature(service, message)
}

// errThrottled is each service's throttling error, as its Common Errors
// list it (EKS ThrottlingException and Auto Scaling and STS Throttling
// with 400, EC2 RequestLimitExceeded with 503); the SDK's standard retryer
// retries all of these codes.
func errThrottled(service string) *apiError {
	switch service {
	case serviceEKS:
		return newError(http.StatusBadRequest, "ThrottlingException", "Rate exceeded")
	case serviceEC2:
		return newError(http.StatusServiceUnavailable, "RequestLimitExceeded", "Request limit exceeded.")
	default:
		return newError(http.StatusBadRequest, "Throttling", "Rate exceeded")
	}
}
