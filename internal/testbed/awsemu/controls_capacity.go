package awsemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// AddCapacityReservation puts a capacity reservation (or, with s.Block, a
// Capacity Block for ML) in the account and returns its ID ("cr-" and 17
// hex digits). Its state follows the wall clock: scheduled before Start,
// active, expired from End on, when EC2 reclaims the instances in it (see
// reclaimReservation).
func (e *Emulator) AddCapacityReservation(s CapacityReservationSeed) (string, error) {
	if e.remote() {
		var out struct {
			ID string `json:"id"`
		}
		err := e.control("add-capacity-reservation", s, &out)
		return out.ID, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r, err := e.addReservation(s, time.Now())
	if err != nil {
		return "", err
	}
	e.scheduleReservation(r)
	return r.id, nil
}

// EndCapacityReservation ends a reservation now, as if its end date had
// come: it is expired, its instances are terminated and their nodes leave
// the cluster.
func (e *Emulator) EndCapacityReservation(id string) error {
	if e.remote() {
		return e.control("end-capacity-reservation", map[string]any{"id": id}, nil)
	}
	e.mu.Lock()
	r := e.st.reservation(id)
	if r == nil {
		e.mu.Unlock()
		return fmt.Errorf("ending capacity reservation %s: no such reservation", id)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if r.stateAt(now) != reservationExpired {
		r.end = now
		r.ended = true
		if r.start.After(now) {
			r.start = now
		}
	}
	removed := e.reclaimReservation(r)
	e.mu.Unlock()
	// A test control: it returns once the reclaimed nodes are gone from
	// the cluster, so that the next read sees the block's end.
	for _, done := range removed {
		<-done
	}
	return nil
}

// SetOnDemandCapacity makes on-demand capacity of an instance type in a
// zone available or not: while it is not, node groups launch no instance
// of that type there except into a capacity reservation, and report the
// launch failure as EKS does.
func (e *Emulator) SetOnDemandCapacity(instanceType, zone string, available bool) {
	if e.remote() {
		e.mustControl("set-on-demand-capacity", map[string]any{"instanceType": instanceType, "zone": zone, "available": available}, nil)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	key := instanceType + "/" + zone
	if available {
		delete(e.st.noOnDemand, key)
	} else {
		e.st.noOnDemand[key] = true
	}
	e.capacityChanged()
}

// scheduleReservation arranges for the reservation's start and end to
// take effect when the wall clock reaches them. e.mu is held.
func (e *Emulator) scheduleReservation(r *capacityReservation) {
	now := time.Now()
	if r.start.After(now) {
		e.after(r.start.Sub(now), func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.capacityChanged()
		})
	}
	if at := e.reclaimAt(r); !at.IsZero() {
		e.after(max(at.Sub(now), 0), func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			if !e.launchable(r, time.Now()) {
				e.reclaimReservation(r)
			}
		})
	}
}

// reclaimReservation terminates the instances that run in an expired
// reservation: they leave their groups and their nodes the cluster. e.mu
// is held.
func (e *Emulator) reclaimReservation(r *capacityReservation) (removed []<-chan struct{}) {
	for _, ng := range e.st.nodegroups {
		gone := slices.DeleteFunc(slices.Clone(ng.nodes), func(n groupNode) bool { return n.reservation != r.id })
		if len(gone) == 0 {
			continue
		}
		ng.nodes = slices.DeleteFunc(ng.nodes, func(n groupNode) bool { return n.reservation == r.id })
		removed = append(removed, e.removeNodes(gone))
	}
	e.capacityChanged()
	return removed
}

// capacityControl serves the capacity test controls over HTTP; handled is
// false for another control's name.
func (e *Emulator) capacityControl(w http.ResponseWriter, r *http.Request) (handled bool) {
	name := strings.TrimPrefix(r.URL.Path, controlPrefix)
	var out any = map[string]string{}
	switch name {
	case "add-capacity-reservation":
		var seed CapacityReservationSeed
		if err := json.NewDecoder(r.Body).Decode(&seed); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return true
		}
		id, err := e.AddCapacityReservation(seed)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return true
		}
		out = map[string]string{"id": id}
	case "end-capacity-reservation":
		var in struct {
			ID string `json:"id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return true
		}
		if err := e.EndCapacityReservation(in.ID); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return true
		}
	case "set-on-demand-capacity":
		var in struct {
			InstanceType string `json:"instanceType"`
			Zone         string `json:"zone"`
			Available    bool   `json:"available"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return true
		}
		e.SetOnDemandCapacity(in.InstanceType, in.Zone, in.Available)
	default:
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
	return true
}

// seedCapacity adds Options.CapacityReservations, once the emulator
// serves (their timers stop with it).
func (e *Emulator) seedCapacity() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	for _, seed := range e.opts.CapacityReservations {
		r, err := e.addReservation(seed, now)
		if err != nil {
			return fmt.Errorf("seeding the emulator's capacity reservations: %w", err)
		}
		e.scheduleReservation(r)
	}
	return nil
}
