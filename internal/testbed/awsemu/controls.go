package awsemu

import (
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/gpuinfra/terraform-provider-gpu/internal/testbed"
)

// signed verifies every request's SigV4 signature, counts throttled
// calls, and hands the rest to next; control (if any) serves the test
// controls under /_testbed/, which are not AWS calls and are not signed.
func (e *Emulator) signed(service string, next, control http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if control != nil && strings.HasPrefix(r.URL.Path, controlPrefix) {
			control.ServeHTTP(w, r)
			return
		}
		e.mu.Lock()
		region := e.st.region
		e.mu.Unlock()
		body, err := verifySigV4(r, service, region, time.Now())
		if err != nil {
			writeError(w, service, err)
			return
		}
		restoreBody(r, body)
		if e.takeThrottle() {
			writeError(w, service, errThrottled(service))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// takeThrottle consumes one of the calls ThrottleNext asked for.
func (e *Emulator) takeThrottle() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.st.throttle > 0 {
		e.st.throttle--
		return true
	}
	return false
}

// countCall records one answered call as "<service>:<Action>".
func (e *Emulator) countCall(service, action string) {
	e.mu.Lock()
	e.st.calls[service+":"+action]++
	e.mu.Unlock()
}

// ThrottleNext makes the next n AWS API calls (any service; not the
// webhook) fail with the service's throttling error.
func (e *Emulator) ThrottleNext(n int) {
	if e.remote() {
		e.mustControl("throttle-next", map[string]any{"n": n}, nil)
		return
	}
	e.mu.Lock()
	e.st.throttle = n
	e.mu.Unlock()
}

// FailNextNodegroupCreate makes the next CreateNodegroup go CREATE_FAILED
// with this health issue (e.g. "AsgInstanceLaunchFailures") instead of
// ACTIVE.
func (e *Emulator) FailNextNodegroupCreate(code, message string) {
	if e.remote() {
		e.mustControl("fail-next-nodegroup-create", map[string]any{"code": code, "message": message}, nil)
		return
	}
	e.mu.Lock()
	e.st.failNextCreate = &healthIssue{Code: code, Message: message}
	e.mu.Unlock()
}

// SetActiveDelay sets how long CREATING, UPDATING and DELETING last from
// now on.
func (e *Emulator) SetActiveDelay(d time.Duration) {
	if e.remote() {
		e.mustControl("set-active-delay", map[string]any{"delay": d.String()}, nil)
		return
	}
	e.mu.Lock()
	e.st.activeDelay = d
	e.mu.Unlock()
}

// DeleteNodegroupOutOfBand deletes a node group at once, as if someone
// deleted it in the console: it is gone, its nodes are removed.
func (e *Emulator) DeleteNodegroupOutOfBand(cluster, name string) error {
	if e.remote() {
		return e.control("delete-nodegroup", map[string]any{"cluster": cluster, "name": name}, nil)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	key := nodegroupKey(cluster, name)
	ng, ok := e.st.nodegroups[key]
	if !ok {
		return errNodegroupNotFound(cluster, name)
	}
	e.removeNodegroup(key, ng)
	return nil
}

// AutoScalingGroupTags are an Auto Scaling group's tags; nil if there is
// no such group.
func (e *Emulator) AutoScalingGroupTags(asgName string) map[string]string {
	if e.remote() {
		var tags map[string]string
		e.mustControl("asg-tags", map[string]any{"name": asgName}, &tags)
		return tags
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	a, ok := e.st.asgs[asgName]
	if !ok {
		return nil
	}
	tags := make(map[string]string, len(a.tags))
	for k, t := range a.tags {
		tags[k] = t.value
	}
	return tags
}

// CallCounts counts the answered AWS API calls by "<service>:<Action>"
// ("eks:CreateNodegroup", "ec2:DescribeInstanceTypes"), and the webhook's
// reviews as "webhook:TokenReview". Throttled and refused calls are not
// counted.
func (e *Emulator) CallCounts() map[string]int {
	if e.remote() {
		var counts map[string]int
		e.mustControl("call-counts", nil, &counts)
		return counts
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.st.calls)
}

// ResetCallCounts starts CallCounts from zero.
func (e *Emulator) ResetCallCounts() {
	if e.remote() {
		e.mustControl("reset-call-counts", nil, nil)
		return
	}
	e.mu.Lock()
	e.st.calls = map[string]int{}
	e.mu.Unlock()
}

// controlPrefix is where the EKS port serves the test controls over HTTP
// (JSON in, JSON out), for a testbed whose emulator is a process of its own.
const controlPrefix = testbed.ControlPrefix

// controlHandler serves POST /_testbed/<control> on the EKS port.
func (e *Emulator) controlHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "test controls take POST", http.StatusMethodNotAllowed)
			return
		}
		if e.capacityControl(w, r) || e.repairControl(w, r) {
			return
		}
		var in struct {
			N       int    `json:"n"`
			Code    string `json:"code"`
			Message string `json:"message"`
			Delay   string `json:"delay"`
			Cluster string `json:"cluster"`
			Name    string `json:"name"`
		}
		if r.ContentLength != 0 {
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		var out any = map[string]string{}
		switch strings.TrimPrefix(r.URL.Path, controlPrefix) {
		case "throttle-next":
			e.ThrottleNext(in.N)
		case "fail-next-nodegroup-create":
			e.FailNextNodegroupCreate(in.Code, in.Message)
		case "set-active-delay":
			d, err := time.ParseDuration(in.Delay)
			if err != nil {
				http.Error(w, "delay: "+err.Error(), http.StatusBadRequest)
				return
			}
			e.SetActiveDelay(d)
		case "delete-nodegroup":
			if err := e.DeleteNodegroupOutOfBand(in.Cluster, in.Name); err != nil {
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
		case "asg-tags":
			out = e.AutoScalingGroupTags(in.Name)
		case "call-counts":
			out = e.CallCounts()
		case "reset-call-counts":
			e.ResetCallCounts()
		default:
			http.Error(w, "unknown test control "+r.URL.Path, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}
