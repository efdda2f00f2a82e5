package provider

import (
	"net/url"
)

// checkHTTPURL returns "" for an absolute http(s) URL with a host, else what
// is wrong; the aws and proxmox blocks check their endpoints with it.
func checkHTTPURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return quote(raw) + " is not a URL"
	case u.Scheme != "https" && u.Scheme != "http":
		return quote(raw) + " has no http:// or https:// scheme"
	case u.Host == "":
		return quote(raw) + " has no host"
	}
	return ""
}
