package pveemu

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

const apiPrefix = "/api2/json"

// apiError is an error as PVE answers it: the status, the message as the
// HTTP reason phrase and as "message" in the body, and for a parameter
// verification failure the per-parameter errors.
type apiError struct {
	status int
	msg    string
	errors map[string]string
	// bare errors (pveproxy's authentication failures) have no body.
	bare bool
	// logDetail is what pveproxy logs beside the answer, never sent.
	logDetail string
}

func (e *apiError) Error() string { return e.msg }

// errf is the error of a plain `die "...\n"` in a PVE API handler: 500,
// the message as the reason phrase.
func errf(format string, args ...any) *apiError {
	return &apiError{status: http.StatusInternalServerError, msg: fmt.Sprintf(format, args...)}
}

// paramErr is PVE's raise_param_exc: 400 "Parameter verification failed."
func paramErr(errors map[string]string) *apiError {
	return &apiError{status: http.StatusBadRequest, msg: "Parameter verification failed.", errors: errors}
}

// permErr is PVE's raise_perm_exc: 403 "Permission check failed (path, privs)".
func permErr(path string, privs ...string) *apiError {
	return &apiError{status: http.StatusForbidden, msg: fmt.Sprintf("Permission check failed (%s, %s)", path, strings.Join(privs, "|"))}
}

// authErr is pveproxy's answer to a request whose credentials fail: 401,
// the reason as the status line, no body.
func authErr(msg string) *apiError {
	return &apiError{status: http.StatusUnauthorized, msg: msg, bare: true}
}

// request is one API call: who makes it and its parameters, merged from
// the query and the body as pveproxy merges them.
type request struct {
	method string
	path   string // below /api2/json
	// pattern is the matched route, "/nodes/{node}/qemu" (CallCounts).
	pattern string
	vars    map[string]string
	params  map[string]string
	auth    identity
}

func (r *request) param(name string) (string, bool) {
	v, ok := r.params[name]
	return v, ok
}

// intParam reads an integer parameter, with PVE's verification error.
func (r *request) intParam(name string) (int, bool, *apiError) {
	v, ok := r.params[name]
	if !ok || v == "" {
		return 0, false, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, false, paramErr(map[string]string{name: fmt.Sprintf("type check ('integer') failed - got '%s'", v)})
	}
	return n, true, nil
}

// pageParams are a list's start (0-based, default 0) and limit (default
// 50), as PVE's task list and task log take them.
func (r *request) pageParams() (start, limit int, perr *apiError) {
	if start, _, perr = r.intParam("start"); perr != nil {
		return 0, 0, perr
	}
	limit, set, perr := r.intParam("limit")
	if perr != nil {
		return 0, 0, perr
	}
	if !set {
		limit = 50
	}
	return start, limit, nil
}

// boolParam reads a boolean parameter (PVE takes 0/1, true/false, yes/no, on/off).
func (r *request) boolParam(name string) (bool, *apiError) {
	v, ok := r.params[name]
	if !ok || v == "" {
		return false, nil
	}
	b, ok := parseBool(v)
	if !ok {
		return false, paramErr(map[string]string{name: fmt.Sprintf("type check ('boolean') failed - got '%s'", v)})
	}
	return b, nil
}

func parseBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}

type handlerFunc func(r *request) (any, error)

type route struct {
	method  string
	pattern string
	re      *regexp.Regexp
	names   []string
	handle  handlerFunc
	// open routes need no authentication (POST /access/ticket).
	open bool
}

// newRoute compiles a pattern such as "/nodes/{node}/qemu/{vmid}".
func newRoute(method, pattern string, h handlerFunc) route {
	var names []string
	var re strings.Builder
	re.WriteString("^")
	for _, seg := range strings.Split(strings.TrimPrefix(pattern, "/"), "/") {
		re.WriteString("/")
		if strings.HasPrefix(seg, "{") {
			names = append(names, strings.Trim(seg, "{}"))
			re.WriteString("([^/]+)")
		} else {
			re.WriteString(regexp.QuoteMeta(seg))
		}
	}
	re.WriteString("$")
	return route{method: method, pattern: pattern, re: regexp.MustCompile(re.String()), names: names, handle: h}
}

// handler serves /api2/json/... and the test controls.
func (e *Emulator) handler() http.Handler {
	routes := e.routes()
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		if strings.HasPrefix(hr.URL.Path, controlPrefix) {
			e.serveControl(w, hr)
			return
		}
		if !strings.HasPrefix(hr.URL.Path, apiPrefix+"/") {
			// pveproxy: a path without a known format
			writeError(w, &apiError{status: http.StatusNotImplemented, msg: "no such uri", bare: true})
			return
		}
		path := strings.TrimSuffix(strings.TrimPrefix(hr.URL.Path, apiPrefix), "/")
		var matched *route
		var vars map[string]string
		for i := range routes {
			m := routes[i].re.FindStringSubmatch(path)
			if m == nil || routes[i].method != hr.Method {
				continue
			}
			matched = &routes[i]
			vars = map[string]string{}
			for j, name := range routes[i].names {
				v, err := url.PathUnescape(m[j+1])
				if err != nil {
					v = m[j+1]
				}
				vars[name] = v
			}
			break
		}
		// The access log: method, path and answer; never parameters or
		// headers, which carry passwords, tickets and token secrets.
		fail := func(err error) {
			status := http.StatusInternalServerError
			if ae, ok := err.(*apiError); ok {
				status = ae.status
			}
			line := strings.SplitN(err.Error(), "\n", 2)[0]
			if ae, ok := err.(*apiError); ok && ae.logDetail != "" {
				line += " (" + ae.logDetail + ")"
			}
			e.logf("%s %s %d %s", hr.Method, path, status, line)
			writeError(w, err)
		}
		params, perr := readParams(hr)
		req := &request{method: hr.Method, path: path, vars: vars, params: params}
		if matched == nil || !matched.open {
			id, err := e.authenticate(hr)
			if err != nil {
				fail(err)
				return
			}
			req.auth = id
		}
		if matched == nil {
			// PVE::APIServer: no handler for the method and path
			fail(&apiError{status: http.StatusNotImplemented, msg: fmt.Sprintf("Method '%s %s' not implemented", hr.Method, path)})
			return
		}
		req.pattern = matched.pattern
		e.countCall(hr.Method + " " + matched.pattern)
		if perr != nil {
			fail(perr)
			return
		}
		data, err := matched.handle(req)
		if err != nil {
			fail(err)
			return
		}
		e.logf("%s %s 200 (%s)", hr.Method, path, req.auth.authid)
		writeData(w, data)
	})
}

func (e *Emulator) logf(format string, args ...any) {
	e.mu.Lock()
	l := e.log
	e.mu.Unlock()
	l.Printf(format, args...)
}

func (e *Emulator) countCall(key string) {
	e.mu.Lock()
	e.st.calls[key]++
	e.mu.Unlock()
}

// readParams merges the query and a form or JSON body, as pveproxy does.
func readParams(hr *http.Request) (map[string]string, *apiError) {
	params := map[string]string{}
	for k, vs := range hr.URL.Query() {
		params[k] = strings.Join(vs, "\x00")
	}
	if hr.Body == nil {
		return params, nil
	}
	body, err := io.ReadAll(io.LimitReader(hr.Body, 1<<20))
	if err != nil {
		return nil, &apiError{status: http.StatusBadRequest, msg: "unable to read request body"}
	}
	if len(body) == 0 {
		return params, nil
	}
	ct, _, _ := mime.ParseMediaType(hr.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		var obj map[string]any
		if err := json.Unmarshal(body, &obj); err != nil {
			return nil, &apiError{status: http.StatusBadRequest, msg: "decoding JSON parameters failed"}
		}
		for k, v := range obj {
			switch v := v.(type) {
			case string:
				params[k] = v
			case bool:
				params[k] = map[bool]string{true: "1", false: "0"}[v]
			case float64:
				params[k] = strconv.FormatFloat(v, 'f', -1, 64)
			case nil:
			default:
				raw, _ := json.Marshal(v)
				params[k] = string(raw)
			}
		}
	default:
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, &apiError{status: http.StatusBadRequest, msg: "unable to parse request body"}
		}
		for k, vs := range form {
			params[k] = strings.Join(vs, "\x00")
		}
	}
	return params, nil
}

// writeData answers 200 with PVE's envelope {"data": ...}.
func writeData(w http.ResponseWriter, data any) {
	envelope := map[string]any{"data": data}
	if page, ok := data.(logPage); ok {
		envelope = map[string]any{"data": page.lines, "total": page.total}
	}
	body, err := json.Marshal(envelope)
	if err != nil {
		writeError(w, errf("encoding the answer: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.Header().Set("Cache-Control", "max-age=0")
	w.Header().Set("Pragma", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// writeError answers as pveproxy does: the message's first line as the
// reason phrase, {"data":null,"message":...} (and "errors") as the body,
// and the connection closed.
func writeError(w http.ResponseWriter, err error) {
	ae, ok := err.(*apiError)
	if !ok {
		ae = errf("%v", err)
	}
	msg := ae.msg
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	reason, _, _ := strings.Cut(msg, "\n")
	var body []byte
	if !ae.bare {
		obj := map[string]any{"data": nil, "message": msg}
		if len(ae.errors) > 0 {
			obj["errors"] = ae.errors
		}
		body, _ = json.Marshal(obj)
	}
	writeRaw(w, ae.status, reason, body)
}

// writeRaw writes a response with its own reason phrase, which
// net/http's ResponseWriter cannot: it takes over the connection.
func writeRaw(w http.ResponseWriter, status int, reason string, body []byte) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	writeResponse(buf.Writer, status, reason, body)
	_ = buf.Flush()
}

func writeResponse(bw *bufio.Writer, status int, reason string, body []byte) {
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\n", status, reason)
	fmt.Fprintf(bw, "Cache-Control: max-age=0\r\nConnection: close\r\nPragma: no-cache\r\nServer: pve-api-daemon/3.0\r\n")
	if body != nil {
		fmt.Fprintf(bw, "Content-Type: application/json;charset=UTF-8\r\n")
	}
	fmt.Fprintf(bw, "Content-Length: %d\r\n\r\n", len(body))
	_, _ = bw.Write(body)
}
