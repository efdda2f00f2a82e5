package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Docker reads its runtimes from /etc/docker/daemon.json (dockerd(8),
// "Daemon configuration file"; moby api/types/system Runtime):
//
//	"runtimes": {"nvidia": {"path": "/usr/bin/nvidia-container-runtime", "args": []}},
//	"default-runtime": "nvidia",
//	"features": {"cdi": true}
//
// "args" is what nvidia-ctk writes; dockerd's own key for runtime arguments
// is "runtimeArgs" and it ignores "args", so an empty list is harmless and
// keeps the file identical to what nvidia-ctk users know. CDI became
// available behind features.cdi in Docker 25 and on by default in Docker 28.2
// (moby "daemon: Enable CDI by default"); writing features.cdi = true is right
// for both.
const defaultDockerConfig = "/etc/docker/daemon.json"

func planDocker(_ context.Context, h *Host, want runtimeWant) ([]Change, error) {
	path := configPathOr(want.configPath, defaultDockerConfig)
	f, err := readConfigFile(h, path)
	if err != nil {
		return nil, err
	}
	doc, err := parseJSONDoc(f.old)
	var serr *jsonSyntaxError
	if errors.As(err, &serr) {
		return nil, &ParseError{Path: path, Line: serr.Line, Column: serr.Column, Err: errors.New(serr.Msg)}
	}
	if err != nil {
		return nil, err
	}
	did, err := editDaemonJSON(doc, want)
	if err != nil {
		var terr *jsonTypeError
		if errors.As(err, &terr) {
			line, col := position(doc.src, terr.at)
			return nil, &ParseError{Path: path, Line: line, Column: col, Err: errors.New(terr.msg)}
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := checkDockerFlags(h, path, doc); err != nil {
		return nil, err
	}
	verb := "update"
	if !f.exists {
		verb = "create"
	}
	data := doc.bytes()
	if !f.exists || len(strings.TrimSpace(string(f.old))) == 0 {
		data = append([]byte(strings.TrimRight(string(data), "\r\n")), doc.nl...)
	}
	change, ok := f.change(data, describeEdits(verb, path, did), "docker")
	if !ok {
		return nil, nil
	}
	return []Change{change}, nil
}

// jsonTypeError is a daemon.json key whose value has the wrong type for
// dockerd ("runtimes": [] instead of an object).
type jsonTypeError struct {
	at  int
	msg string
}

func (e *jsonTypeError) Error() string { return e.msg }

func editDaemonJSON(doc *jsonDoc, want runtimeWant) ([]string, error) {
	wantObject := func(path ...string) (*jsonValue, error) {
		v := doc.get(path...)
		if v != nil && v.kind != '{' {
			return nil, &jsonTypeError{at: v.start, msg: fmt.Sprintf("%q must be a JSON object, as dockerd reads it", strings.Join(path, "."))}
		}
		return v, nil
	}
	var did []string

	runtimes, err := wantObject("runtimes")
	if err != nil {
		return nil, err
	}
	nvidia, err := wantObject("runtimes", nvidiaRuntime)
	if err != nil {
		return nil, err
	}
	entry := jsonObject{{"path", want.binary}, {"args", []string{}}}
	switch {
	case runtimes == nil:
		err = doc.set([]string{"runtimes"}, jsonObject{{nvidiaRuntime, entry}})
		did = append(did, "add the nvidia runtime ("+want.binary+")")
	case nvidia == nil:
		err = doc.set([]string{"runtimes", nvidiaRuntime}, entry)
		did = append(did, "add the nvidia runtime ("+want.binary+")")
	case doc.decode("runtimes", nvidiaRuntime, "path") != want.binary:
		err = doc.set([]string{"runtimes", nvidiaRuntime, "path"}, want.binary)
		did = append(did, "point the nvidia runtime at "+want.binary)
	}
	if err != nil {
		return nil, err
	}

	def := doc.decode("default-runtime")
	switch {
	case want.setDefault && def != nvidiaRuntime:
		err = doc.set([]string{"default-runtime"}, nvidiaRuntime)
		did = append(did, "make nvidia the default runtime")
	case !want.setDefault && def == nvidiaRuntime:
		err = doc.remove([]string{"default-runtime"})
		did = append(did, "stop making nvidia the default runtime")
	}
	if err != nil {
		return nil, err
	}

	if want.enableCDI && doc.decode("features", "cdi") != true {
		features, err := wantObject("features")
		if err != nil {
			return nil, err
		}
		if features == nil {
			err = doc.set([]string{"features"}, jsonObject{{"cdi", true}})
		} else {
			err = doc.set([]string{"features", "cdi"}, true)
		}
		if err != nil {
			return nil, err
		}
		did = append(did, "enable CDI")
	}

	if want.cdiSpecDir != "" {
		v := doc.get("cdi-spec-dirs")
		var dirs []string
		if v != nil {
			list, ok := stringList(doc.decode("cdi-spec-dirs"))
			if !ok {
				return nil, &jsonTypeError{at: v.start, msg: `"cdi-spec-dirs" must be a list of directories`}
			}
			dirs = list
		}
		if next := withSpecDir(dirs, v != nil, want.cdiSpecDir); next != nil && !slices.Equal(next, dirs) {
			if err := doc.set([]string{"cdi-spec-dirs"}, next); err != nil {
				return nil, err
			}
			did = append(did, "scan "+want.cdiSpecDir+" for CDI specs")
		}
	}
	return did, nil
}
