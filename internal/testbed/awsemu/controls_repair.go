package awsemu

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// SetRepairMinute sets how long one minute of node auto repair's waits
// lasts from now on (Options.RepairMinute); waits already running are
// measured with the new minute.
func (e *Emulator) SetRepairMinute(d time.Duration) {
	if e.remote() {
		e.mustControl("set-repair-minute", map[string]any{"minute": d.String()}, nil)
		return
	}
	if d <= 0 {
		d = time.Minute
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.st.repair.minute = d
	e.evaluateRepairs(time.Now())
}

// NodeRepairStatus is what node auto repair did to a node group's nodes,
// oldest repair first, and whether it is paused now.
func (e *Emulator) NodeRepairStatus(cluster, name string) (NodeRepairStatus, error) {
	if e.remote() {
		var out NodeRepairStatus
		err := e.control("node-repair-status", map[string]any{"cluster": cluster, "name": name}, &out)
		return out, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ng, ok := e.st.nodegroups[nodegroupKey(cluster, name)]
	if !ok {
		return NodeRepairStatus{}, errNodegroupNotFound(cluster, name)
	}
	out := NodeRepairStatus{Paused: ng.repairPaused, Repairs: []NodeRepair{}}
	for _, rec := range ng.repairs {
		out.Repairs = append(out.Repairs, *rec)
	}
	return out, nil
}

// repairControl serves the node repair controls; false for another name.
func (e *Emulator) repairControl(w http.ResponseWriter, r *http.Request) (handled bool) {
	var out any = map[string]string{}
	switch strings.TrimPrefix(r.URL.Path, controlPrefix) {
	case "set-repair-minute":
		var in struct {
			Minute string `json:"minute"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return true
		}
		d, err := time.ParseDuration(in.Minute)
		if err != nil {
			http.Error(w, "minute: "+err.Error(), http.StatusBadRequest)
			return true
		}
		e.SetRepairMinute(d)
	case "node-repair-status":
		var in struct {
			Cluster string `json:"cluster"`
			Name    string `json:"name"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return true
		}
		status, err := e.NodeRepairStatus(in.Cluster, in.Name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return true
		}
		out = status
	default:
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
	return true
}
