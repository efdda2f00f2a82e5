package awsemu

import (
	"encoding/base64"
	"encoding/xml"
	"net/http"
	"net/url"
	"path"
	"strconv"
)

// The AWS query protocol (EC2, Auto Scaling, STS): form-encoded
// parameters, lists as Name.N (EC2) or Name.member.N (the others).

// queryList is the list parameter prefix.1, prefix.2, ... until one is missing.
func queryList(form url.Values, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := form[prefix+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v[0])
	}
}

// queryFilter is one Filter of a Describe call.
type queryFilter struct {
	name   string
	values []string
}

// queryFilters reads Filter.N.Name / Filter.N.Value.M (EC2, member "")
// or Filters.member.N.Name / Filters.member.N.Values.member.M (Auto Scaling).
func queryFilters(form url.Values, ec2 bool) []queryFilter {
	var out []queryFilter
	prefix, valuePrefix := "Filters.member.", ".Values.member"
	if ec2 {
		prefix, valuePrefix = "Filter.", ".Value"
	}
	for i := 1; ; i++ {
		base := prefix + strconv.Itoa(i)
		name, ok := form[base+".Name"]
		if !ok {
			return out
		}
		out = append(out, queryFilter{name: name[0], values: queryList(form, base+valuePrefix)})
	}
}

// matchesAny reports whether value matches one of the filter's values,
// which may hold the wildcards * and ? as EC2's filters do.
func matchesAny(values []string, value string) bool {
	for _, pattern := range values {
		if ok, _ := path.Match(pattern, value); ok || pattern == value {
			return true
		}
	}
	return false
}

// page cuts items to a page: token (opaque to clients) is the offset.
func page[T any](items []T, maxResults int, token string) ([]T, string, bool) {
	start := 0
	if token != "" {
		raw, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil {
			return nil, "", false
		}
		n, err := strconv.Atoi(string(raw))
		if err != nil || n < 0 || n > len(items) {
			return nil, "", false
		}
		start = n
	}
	end := len(items)
	if maxResults > 0 && start+maxResults < end {
		end = start + maxResults
	}
	next := ""
	if end < len(items) {
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	}
	return items[start:end], next, true
}

type responseMetadata struct {
	RequestID string `xml:"RequestId"`
}

// writeQueryResult sends an Auto Scaling or STS response:
// <ActionResponse xmlns><ActionResult>result</ActionResult><ResponseMetadata/></ActionResponse>.
func writeQueryResult(w http.ResponseWriter, service, action string, result any) {
	w.Header().Set("Content-Type", "text/xml")
	_, _ = w.Write([]byte(xml.Header))
	enc := xml.NewEncoder(w)
	start := xml.StartElement{Name: xml.Name{Local: action + "Response"}, Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: queryNamespace(service)}}}
	_ = enc.EncodeToken(start)
	if result != nil {
		_ = enc.EncodeElement(result, xml.StartElement{Name: xml.Name{Local: action + "Result"}})
	}
	_ = enc.EncodeElement(responseMetadata{RequestID: nextRequestID()}, xml.StartElement{Name: xml.Name{Local: "ResponseMetadata"}})
	_ = enc.EncodeToken(start.End())
	_ = enc.Flush()
}

// writeEC2Result sends an EC2 response: <ActionResponse xmlns>fields of
// result</ActionResponse>; result holds the requestId.
func writeEC2Result(w http.ResponseWriter, action string, result any) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	_, _ = w.Write([]byte(xml.Header))
	enc := xml.NewEncoder(w)
	start := xml.StartElement{Name: xml.Name{Local: action + "Response"}, Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: queryNamespace(serviceEC2)}}}
	_ = enc.EncodeElement(result, start)
	_ = enc.Flush()
}
