package pveemu

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// identity is who makes a request: authid is what PVE's $authuser is,
// "root@pam" or "terraform@pve!gpu".
type identity struct {
	authid string
	user   string
	token  string // the token name, "" for a ticket
}

// pve9Privileges are PVE 9's privileges (pve-access-control
// PVE/AccessControl.pm, $privgroups plus Permissions.Modify): what root@pam
// has everywhere. PVE 9 dropped VM.Monitor ("privileges: drop
// VM.Monitor") and added VM.GuestAgent.{Audit,FileRead,FileWrite,
// FileSystemMgmt,Unrestricted} and VM.Replicate.
var pve9Privileges = []string{
	// VM: root, admin, user, audit
	"VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.HWType",
	"VM.Config.Options", "VM.Allocate", "VM.Clone", "VM.GuestAgent.Unrestricted", "VM.Migrate",
	"VM.Replicate", "VM.Snapshot", "VM.Snapshot.Rollback",
	"VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Console", "VM.Backup", "VM.GuestAgent.FileRead",
	"VM.GuestAgent.FileSystemMgmt", "VM.GuestAgent.FileWrite", "VM.PowerMgmt",
	"VM.Audit", "VM.GuestAgent.Audit",
	// Sys
	"Sys.PowerMgmt", "Sys.Modify", "Sys.Incoming", "Sys.AccessNetwork", "Sys.Console", "Sys.Syslog", "Sys.Audit",
	// Datastore
	"Datastore.Allocate", "Datastore.AllocateTemplate", "Datastore.AllocateSpace", "Datastore.Audit",
	// SDN
	"SDN.Allocate", "SDN.Audit", "SDN.Use",
	// User
	"Realm.Allocate", "User.Modify", "Group.Allocate", "Realm.AllocateUser",
	// Pool
	"Pool.Allocate", "Pool.Audit",
	// Mapping
	"Mapping.Modify", "Mapping.Use", "Mapping.Audit",
	// not in a group
	"Permissions.Modify",
}

// privileges are the privileges id has on path: RPCEnvironment's
// permissions (see access.go).
func (id identity) privileges(path string) map[string]bool {
	out := map[string]bool{}
	for p := range permissionsOf(id.authid, path) {
		out[p] = true
	}
	return out
}

// check is RPCEnvironment's check (all of privs, the first missing one
// named: "Permission check failed (/vms/100, VM.Allocate)") or, anyOf,
// check_any ("Permission check failed (/, Sys.Audit|Sys.Modify)").
func (id identity) check(path string, anyOf bool, privs ...string) *apiError {
	have := id.privileges(path)
	for _, p := range privs {
		if have[p] && anyOf {
			return nil
		}
		if !have[p] && !anyOf {
			return permErr(path, p)
		}
	}
	if anyOf {
		return permErr(path, privs...)
	}
	return nil
}

var tokenHeader = regexp.MustCompile(`(?:^|\s)PVEAPIToken(?:=| )([^;]*)`)
var cookieHeader = regexp.MustCompile(`(?:^|\s)PVEAuthCookie(?:=| )([^;]*)`)

// authValue is PVE::APIServer::Formatter::extract_auth_value.
func authValue(re *regexp.Regexp, header string) string {
	m := re.FindStringSubmatch(header)
	if m == nil {
		return ""
	}
	v, err := url.PathUnescape(m[1])
	if err != nil {
		return m[1]
	}
	return v
}

// authenticate is pveproxy's auth_handler (pve-manager PVE/HTTPServer.pm):
// the ticket cookie (or the cookie in the Authorization header), else an
// API token; a ticket needs the CSRF prevention token on every method but
// GET, a token does not. Since pve-manager 9.1.5 ("http server: unify
// error message in case of auth failure") a token or ticket that fails
// verification is 401 "Authentication failed!" whatever the reason; the
// reason goes to pveproxy's log only ("authentication failure: ...").
func (e *Emulator) authenticate(hr *http.Request) (identity, *apiError) {
	ticket := ""
	if c, err := hr.Cookie("PVEAuthCookie"); err == nil {
		ticket, _ = url.PathUnescape(c.Value)
	}
	authz := hr.Header.Get("Authorization")
	if ticket == "" {
		ticket = authValue(cookieHeader, authz)
	}
	if ticket == "" {
		if token := authValue(tokenHeader, authz); token != "" {
			id, reason := verifyToken(token)
			if reason != "" {
				return identity{}, authFailed(reason)
			}
			return id, nil
		}
		return identity{}, authErr("No ticket")
	}
	e.mu.Lock()
	user, ok := e.st.tickets[ticket]
	e.mu.Unlock()
	if !ok {
		// PVE::AccessControl::verify_ticket
		return identity{}, authFailed("permission denied - invalid PVE ticket")
	}
	if hr.Method != http.MethodGet {
		// PVE::AccessControl::verify_csrf_prevention_token, outside the
		// eval that unifies the message
		csrf := hr.Header.Get("CSRFPreventionToken")
		e.mu.Lock()
		owner, ok := e.st.csrf[csrf]
		e.mu.Unlock()
		if csrf == "" || !ok || owner != user {
			return identity{}, authErr("Permission denied - invalid csrf token")
		}
	}
	return identity{authid: user, user: user}, nil
}

// authFailed is auth_handler's answer to credentials that fail
// verification: 401 "Authentication failed!", the reason logged.
func authFailed(reason string) *apiError {
	ae := authErr("Authentication failed!")
	ae.logDetail = "authentication failure: " + reason
	return ae
}

// tokenIDPattern is pve-access-control's $token_full_regex: user, realm
// and token name.
var tokenIDPattern = regexp.MustCompile(`^([^\s:/]+)@([A-Za-z][A-Za-z0-9.\-_]+)!([A-Za-z][A-Za-z0-9.\-_]+)$`)

// verifyToken is PVE::AccessControl::verify_token: the token's identity,
// or the reason it fails.
func verifyToken(value string) (identity, string) {
	// /^(.*)=(.*)$/: the token ID is everything before the last "="
	eq := strings.LastIndex(value, "=")
	if eq < 0 {
		return identity{}, "no tokenid specified"
	}
	tokenid, secret := value[:eq], value[eq+1:]
	if !tokenIDPattern.MatchString(tokenid) {
		return identity{}, fmt.Sprintf("'%s' is not a valid token ID - not able to split into user and token parts", tokenid)
	}
	user, name, _ := strings.Cut(tokenid, "!")
	if findUser(user) == nil {
		return identity{}, fmt.Sprintf("no such user ('%s')", user)
	}
	t, ok := tokens[tokenid]
	if !ok {
		return identity{}, fmt.Sprintf("no such token '%s' for user '%s'", name, user)
	}
	if subtle.ConstantTimeCompare([]byte(secret), []byte(t.secret)) != 1 {
		return identity{}, "invalid token value!"
	}
	return identity{authid: tokenid, user: user, token: name}, ""
}

// createTicket is POST /access/ticket: a ticket and a CSRF prevention
// token for the password's user; a wrong one is 401 "authentication failure".
func (e *Emulator) createTicket(r *request) (any, error) {
	username, _ := r.param("username")
	password, _ := r.param("password")
	if realm, ok := r.param("realm"); ok && realm != "" && !strings.Contains(username, "@") {
		username += "@" + realm
	}
	if username != RootUser || subtle.ConstantTimeCompare([]byte(password), []byte(RootPassword)) != 1 {
		return nil, &apiError{status: http.StatusUnauthorized, msg: "authentication failure"}
	}
	now := fmt.Sprintf("%08X", time.Now().Unix())
	ticket := "PVE:" + username + ":" + now + "::" + randomBase64(256)
	csrf := now + ":" + randomBase64(32)
	e.mu.Lock()
	e.st.tickets[ticket] = username
	e.st.csrf[csrf] = username
	e.mu.Unlock()
	return map[string]any{"username": username, "ticket": ticket, "CSRFPreventionToken": csrf, "cap": apiCapabilities(username)}, nil
}

// capabilityAreas is RPCEnvironment::compute_api_permission's
// $priv_re_map: which privileges each area of the GUI's "cap" shows.
var capabilityAreas = map[string]*regexp.Regexp{
	"vms":     regexp.MustCompile(`^(VM\.|Permissions\.Modify)`),
	"access":  regexp.MustCompile(`^((User|Group)\.|Permissions\.Modify)`),
	"storage": regexp.MustCompile(`^(Datastore\.|Permissions\.Modify)`),
	"nodes":   regexp.MustCompile(`^(Sys\.|Permissions\.Modify)`),
	"sdn":     regexp.MustCompile(`^(SDN\.|Permissions\.Modify)`),
	"dc":      regexp.MustCompile(`^(Sys\.Audit|Sys\.Modify|SDN\.)`),
	"mapping": regexp.MustCompile(`^(Mapping\.|Permissions.Modify)`),
}

// apiCapabilities is RPCEnvironment::compute_api_permission: the
// privileges authid has on the top-level paths and on every ACL path, by
// area (the path's first element, "dc" for /).
func apiCapabilities(authid string) map[string]map[string]int {
	out := map[string]map[string]int{}
	for area := range capabilityAreas {
		out[area] = map[string]int{}
	}
	paths := []string{"/", "/nodes", "/access/groups", "/vms", "/storage", "/sdn", "/mapping"}
	paths = append(paths, aclPaths()...)
	for _, path := range paths {
		area := "dc"
		if first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/"); first != "" {
			area = first
		}
		re, ok := capabilityAreas[area]
		if !ok {
			continue
		}
		for p := range permissionsOf(authid, path) {
			if re.MatchString(p) {
				out[area][p] = 1
			}
		}
	}
	return out
}

func randomBase64(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}
