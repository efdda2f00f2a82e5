package pveemu

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// identity is who makes a request: authid is what PVE's $authuser is,
// "root@pam" or "terraform@pve!gpu".
type identity struct {
	authid string
	user   string
	token  string // the token name, "" for a ticket
	// privsep: the token has only its own ACL, not its user's privileges.
	privsep bool
	acl     map[string][]string
}

// apiToken is one API token the emulator knows: a privilege-separated
// one has acl, the other its user's privileges.
type apiToken struct {
	secret  string
	privsep bool
	acl     map[string][]string
}

var tokens = map[string]apiToken{
	TokenID:          {secret: TokenSecret, privsep: true, acl: tokenACL},
	RootTokenID:      {secret: RootTokenSecret, privsep: false},
	NoMappingTokenID: {secret: NoMappingTokenSecret, privsep: true, acl: withoutMapping(tokenACL)},
}

func withoutMapping(acl map[string][]string) map[string][]string {
	out := maps.Clone(acl)
	delete(out, "/mapping/pci")
	return out
}

// allPrivileges are PVE 8's privileges: what root@pam has everywhere.
var allPrivileges = []string{
	"Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.AllocateTemplate", "Datastore.Audit",
	"Group.Allocate", "Mapping.Audit", "Mapping.Modify", "Mapping.Use", "Permissions.Modify",
	"Pool.Allocate", "Pool.Audit", "Realm.Allocate", "Realm.AllocateUser",
	"SDN.Allocate", "SDN.Audit", "SDN.Use", "Sys.AccessNetwork", "Sys.Audit", "Sys.Console",
	"Sys.Incoming", "Sys.Modify", "Sys.PowerMgmt", "Sys.Syslog", "User.Modify",
	"VM.Allocate", "VM.Audit", "VM.Backup", "VM.Clone", "VM.Config.CDROM", "VM.Config.CPU",
	"VM.Config.Cloudinit", "VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory",
	"VM.Config.Network", "VM.Config.Options", "VM.Console", "VM.GuestAgent.Audit",
	"VM.GuestAgent.Unrestricted", "VM.Migrate", "VM.Monitor", "VM.PowerMgmt", "VM.Snapshot",
	"VM.Snapshot.Rollback",
}

// tokenACL is the privilege-separated token's ACL: path -> privileges,
// each propagating to the paths below.
var tokenACL = map[string][]string{
	"/": {"Sys.Audit"},
	"/vms": {"VM.Allocate", "VM.Audit", "VM.Clone", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Cloudinit",
		"VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options",
		"VM.Console", "VM.GuestAgent.Audit", "VM.Migrate", "VM.Monitor", "VM.PowerMgmt"},
	"/storage":     {"Datastore.AllocateSpace", "Datastore.Audit"},
	"/mapping/pci": {"Mapping.Audit", "Mapping.Use"},
	"/sdn/zones":   {"SDN.Audit", "SDN.Use"},
}

// privileges are the privileges id has on path.
func (id identity) privileges(path string) map[string]bool {
	out := map[string]bool{}
	if id.user == RootUser && !id.privsep {
		for _, p := range allPrivileges {
			out[p] = true
		}
		return out
	}
	for aclPath, privs := range id.acl {
		if aclPath == "/" || path == aclPath || strings.HasPrefix(path, aclPath+"/") {
			for _, p := range privs {
				out[p] = true
			}
		}
	}
	return out
}

// check is $rpcenv->check: all of privs on path, or any of them.
func (id identity) check(path string, anyOf bool, privs ...string) *apiError {
	have := id.privileges(path)
	for _, p := range privs {
		if have[p] && anyOf {
			return nil
		}
		if !have[p] && !anyOf {
			return permErr(path, privs...)
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

// authenticate is pveproxy's auth_handler: the ticket cookie (or the
// cookie in the Authorization header), else an API token; a ticket needs
// the CSRF prevention token on every method but GET, a token does not.
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
			return verifyToken(token)
		}
		return identity{}, authErr("No ticket")
	}
	e.mu.Lock()
	user, ok := e.st.tickets[ticket]
	e.mu.Unlock()
	if !ok {
		return identity{}, authErr("permission denied - invalid PVE ticket")
	}
	if hr.Method != http.MethodGet {
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

// verifyToken is PVE::AccessControl::verify_token.
func verifyToken(value string) (identity, *apiError) {
	// /^(.*)=(.*)$/: the token ID is everything before the last "="
	eq := strings.LastIndex(value, "=")
	if eq < 0 {
		return identity{}, authErr("no tokenid specified")
	}
	tokenid, secret := value[:eq], value[eq+1:]
	user, name, ok := strings.Cut(tokenid, "!")
	if !ok || !strings.Contains(user, "@") || name == "" {
		return identity{}, authErr(fmt.Sprintf("'%s' is not a valid token ID - not able to split into user and token parts", tokenid))
	}
	if user != RootUser && user != "terraform@pve" {
		return identity{}, authErr(fmt.Sprintf("no such user ('%s')", user))
	}
	t, ok := tokens[tokenid]
	if !ok {
		return identity{}, authErr(fmt.Sprintf("no such token '%s' for user '%s'", name, user))
	}
	if subtle.ConstantTimeCompare([]byte(secret), []byte(t.secret)) != 1 {
		return identity{}, authErr("invalid token value!")
	}
	return identity{authid: tokenid, user: user, token: name, privsep: t.privsep, acl: t.acl}, nil
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
	caps := map[string]map[string]int{}
	for _, area := range []string{"vms", "storage", "nodes", "access", "dc", "mapping", "sdn"} {
		caps[area] = map[string]int{}
	}
	for _, p := range allPrivileges {
		area := map[string]string{"VM": "vms", "Datastore": "storage", "Sys": "nodes", "User": "access", "Group": "access",
			"Realm": "access", "Permissions": "access", "Pool": "dc", "Mapping": "mapping", "SDN": "sdn"}[strings.SplitN(p, ".", 2)[0]]
		caps[area][p] = 1
	}
	return map[string]any{"username": username, "ticket": ticket, "CSRFPreventionToken": csrf, "cap": caps}, nil
}

// permissions is GET /access/permissions: path -> privilege -> 1.
func (e *Emulator) permissions(r *request) (any, error) {
	id := r.auth
	if userid, ok := r.param("userid"); ok && userid != "" && userid != id.authid {
		if err := id.check("/access", false, "Sys.Audit"); err != nil {
			return nil, err
		}
		if t, ok := tokens[userid]; ok {
			user, name, _ := strings.Cut(userid, "!")
			id = identity{authid: userid, user: user, token: name, privsep: t.privsep, acl: t.acl}
		} else if userid == RootUser {
			id = identity{authid: RootUser, user: RootUser}
		} else {
			return nil, errf("no such user ('%s')", userid)
		}
	}
	var paths []string
	if path, ok := r.param("path"); ok && path != "" {
		paths = []string{path}
	} else if id.user == RootUser && !id.privsep {
		paths = []string{"/"}
	} else {
		paths = slices.Sorted(maps.Keys(id.acl))
	}
	out := map[string]map[string]int{}
	for _, path := range paths {
		privs := map[string]int{}
		for p := range id.privileges(path) {
			privs[p] = 1
		}
		out[path] = privs
	}
	return out, nil
}

func randomBase64(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}
