package pveemu

import (
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// The read side of pve-access-control's PVE/API2/User.pm and
// PVE/API2/AccessControl.pm 'permissions': the users, their API tokens and
// effective permissions. (Editing users, tokens and ACLs is not emulated.)
func (e *Emulator) accessRoutes() []route {
	return []route{
		newRoute("GET", "/access/users", e.listUsers),
		newRoute("GET", "/access/users/{userid}", e.readUser),
		newRoute("GET", "/access/users/{userid}/token", e.listUserTokens),
		newRoute("GET", "/access/users/{userid}/token/{tokenid}", e.readUserToken),
	}
}

// noSuchUser is AccessControl::check_user_exist's error.
func noSuchUser(userid string) *apiError { return errf("no such user ('%s')", userid) }

// tokenInfo is a token as user.cfg's parser keeps it (the 'token-info'
// standard option): privsep and expire always, comment when set.
func tokenInfo(t apiToken) map[string]any {
	out := map[string]any{"privsep": boolInt(t.privsep), "expire": 0}
	if t.comment != "" {
		out["comment"] = t.comment
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// userTokens are userid's tokens by name.
func userTokens(userid string) map[string]apiToken {
	out := map[string]apiToken{}
	for id, t := range tokens {
		if user, name, _ := strings.Cut(id, "!"); user == userid {
			out[name] = t
		}
	}
	return out
}

// userData is User.pm's $extract_user_data: enable, expire and the set
// fields; full adds groups and tokens (by name).
func userData(u pveUser, full bool) map[string]any {
	out := map[string]any{"enable": 1, "expire": 0}
	if u.email != "" {
		out["email"] = u.email
	}
	if u.comment != "" {
		out["comment"] = u.comment
	}
	if !full {
		return out
	}
	out["groups"] = []string{}
	if ts := userTokens(u.userid); len(ts) > 0 {
		byName := map[string]any{}
		for name, t := range ts {
			byName[name] = tokenInfo(t)
		}
		out["tokens"] = byName
	}
	return out
}

// listUsers is GET /access/users (User.pm 'index'): the users the caller
// may see, those of every group with User.Modify or Sys.Audit on
// /access/groups (there are no groups), and always the caller's own user
// (for a token, $authuser is the token ID, which no user equals); with
// full=1 their groups (joined: "") and tokens (a list with tokenid).
func (e *Emulator) listUsers(r *request) (any, error) {
	full, perr := r.boolParam("full")
	if perr != nil {
		return nil, perr
	}
	_, filterEnabled := r.params["enabled"]
	enabled, perr := r.boolParam("enabled")
	if perr != nil {
		return nil, perr
	}
	canUserMod := r.auth.check("/access/groups", true, "User.Modify", "Sys.Audit") == nil
	out := []map[string]any{}
	for _, u := range slices.SortedFunc(slices.Values(users), func(a, b pveUser) int { return strings.Compare(a.userid, b.userid) }) {
		if !canUserMod && u.userid != r.auth.authid {
			continue
		}
		if filterEnabled && !enabled {
			continue // every user here is enabled
		}
		entry := userData(u, full)
		if full {
			entry["groups"] = ""
			if ts := userTokens(u.userid); len(ts) > 0 {
				list := []map[string]any{}
				for _, name := range slices.Sorted(maps.Keys(ts)) {
					item := tokenInfo(ts[name])
					item["tokenid"] = name
					list = append(list, item)
				}
				entry["tokens"] = list
			}
		}
		_, realm, _ := strings.Cut(u.userid, "@")
		if typ, ok := realmTypes[realm]; ok {
			entry["realm-type"] = typ
		}
		entry["userid"] = u.userid
		out = append(out, entry)
	}
	return out, nil
}

// checkUseridGroup is RPCEnvironment's 'userid-group' check: the user
// must exist (check_user_exist, "no such user"), and the caller needs any
// of privs on /access/groups (or on a group of the user: there are none),
// else 403 "Permission check failed". noerr answers false instead of the
// 403 and of the missing user, as inside an 'or'.
func checkUseridGroup(r *request, userid string, noerr bool, privs ...string) (bool, *apiError) {
	if r.auth.authid == RootUser {
		return true, nil // check_api2_permissions: root passes every check
	}
	if findUser(userid) == nil {
		if noerr {
			return false, nil
		}
		return false, noSuchUser(userid)
	}
	if r.auth.check("/access/groups", true, privs...) == nil {
		return true, nil
	}
	if noerr {
		return false, nil
	}
	return false, &apiError{status: http.StatusForbidden, msg: "Permission check failed"}
}

// checkSelfOrUserModify is ['or', ['userid-param', 'self'],
// ['userid-group', ['User.Modify']]], the token endpoints' permission: the
// user itself (not one of its tokens: $authuser is then the token ID) or
// User.Modify; else 403 "Permission check failed".
func checkSelfOrUserModify(r *request, userid string) *apiError {
	if r.auth.authid == RootUser || (findUser(userid) != nil && r.auth.authid == userid) {
		return nil
	}
	if ok, _ := checkUseridGroup(r, userid, true, "User.Modify"); ok {
		return nil
	}
	return &apiError{status: http.StatusForbidden, msg: "Permission check failed"}
}

// readUser is GET /access/users/{userid} (User.pm 'read_user'): the user
// with its groups (a list) and tokens (by name).
func (e *Emulator) readUser(r *request) (any, error) {
	userid := r.vars["userid"]
	if _, err := checkUseridGroup(r, userid, false, "User.Modify", "Sys.Audit"); err != nil {
		return nil, err
	}
	u := findUser(userid)
	if u == nil {
		return nil, noSuchUser(userid)
	}
	return userData(*u, true), nil
}

// listUserTokens is GET /access/users/{userid}/token (User.pm
// 'token_index').
func (e *Emulator) listUserTokens(r *request) (any, error) {
	userid := r.vars["userid"]
	if err := checkSelfOrUserModify(r, userid); err != nil {
		return nil, err
	}
	if findUser(userid) == nil {
		return nil, noSuchUser(userid)
	}
	ts := userTokens(userid)
	out := []map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(ts)) {
		item := tokenInfo(ts[name])
		item["tokenid"] = name
		out = append(out, item)
	}
	return out, nil
}

// readUserToken is GET /access/users/{userid}/token/{tokenid} (User.pm
// 'read_token'): AccessControl::check_token_exist.
func (e *Emulator) readUserToken(r *request) (any, error) {
	userid, name := r.vars["userid"], r.vars["tokenid"]
	if err := checkSelfOrUserModify(r, userid); err != nil {
		return nil, err
	}
	if findUser(userid) == nil {
		return nil, noSuchUser(userid)
	}
	t, ok := userTokens(userid)[name]
	if !ok {
		return nil, errf("no such token '%s' for user '%s'", name, userid)
	}
	return tokenInfo(t), nil
}

// permissionsUserid is the schema's pattern for /access/permissions'
// userid: a user ID or a full token ID.
var permissionsUserid = regexp.MustCompile(`^[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+(?:![A-Za-z][A-Za-z0-9.\-_]+)?$`)

// effectivePaths are RPCEnvironment::get_effective_permissions' default
// paths, to which it adds every ACL path (and pool paths: there are no
// pools).
var effectivePaths = []string{"/", "/access", "/access/groups", "/nodes", "/pool", "/sdn", "/storage", "/vms"}

// permissions is GET /access/permissions (pve-access-control
// API2/AccessControl.pm 'permissions'): path -> privilege -> propagate
// (0 for Sys.Audit given on / alone). Anyone may ask about themselves or a
// token of theirs; about anyone else only with Sys.Audit on /access. With
// path, that path's privileges (possibly none); without, every default
// and ACL path where userid has any.
func (e *Emulator) permissions(r *request) (any, error) {
	authid := r.auth.authid
	userid, ok := r.param("userid")
	if !ok || userid == "" {
		userid = authid
	} else if !permissionsUserid.MatchString(userid) {
		return nil, paramErr(map[string]string{"userid": "value does not match the regex pattern"})
	}
	owner, _, isToken := strings.Cut(userid, "!")
	if userid != authid && (!isToken || owner != authid) {
		if err := r.auth.check("/access", false, "Sys.Audit"); err != nil {
			return nil, err
		}
	}
	privs := func(path string) map[string]int { return permissionsOf(userid, path) }
	out := map[string]map[string]int{}
	if path, ok := r.param("path"); ok && path != "" {
		out[path] = privs(path)
		return out, nil
	}
	for _, path := range append(slices.Clone(effectivePaths), aclPaths()...) {
		if p := privs(path); len(p) > 0 {
			out[path] = p
		}
	}
	return out, nil
}
