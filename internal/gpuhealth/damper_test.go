package gpuhealth

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

var t0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

func verdict(reason string) Verdict {
	status := corev1.ConditionFalse
	if reason == ReasonReady {
		status = corev1.ConditionTrue
	}
	return Verdict{Status: status, Reason: reason, Message: "message of " + reason}
}

func TestDamper(t *testing.T) {
	type offer struct {
		at          time.Duration // since t0
		reason      string
		wantPublish string        // "" for hold
		wantRetry   time.Duration // since t0; 0 for none
	}
	tests := []struct {
		description string
		interval    time.Duration
		offers      []offer
	}{
		{
			"the first verdict is published at once",
			time.Minute,
			[]offer{{0, ReasonReady, ReasonReady, 0}},
		},
		{
			"a change after a quiet interval is published at once",
			time.Minute,
			[]offer{
				{0, ReasonReady, ReasonReady, 0},
				{5 * time.Minute, "NvidiaXID79Error", "NvidiaXID79Error", 0},
			},
		},
		{
			"a change exactly one interval after the last publish is published at once",
			time.Minute,
			[]offer{
				{0, ReasonReady, ReasonReady, 0},
				{time.Minute, "NvidiaXID79Error", "NvidiaXID79Error", 0},
			},
		},
		{
			"an equal verdict is never published again",
			time.Minute,
			[]offer{
				{0, ReasonReady, ReasonReady, 0},
				{time.Second, ReasonReady, "", 0},
				{time.Hour, ReasonReady, "", 0},
			},
		},
		{
			"a change within the interval is held until it ends",
			time.Minute,
			[]offer{
				{0, ReasonReady, ReasonReady, 0},
				{10 * time.Second, "NvidiaXID79Error", "", time.Minute},
				{time.Minute, "NvidiaXID79Error", "NvidiaXID79Error", 0},
			},
		},
		{
			"a held change that goes back to the published verdict is dropped",
			time.Minute,
			[]offer{
				{0, ReasonReady, ReasonReady, 0},
				{10 * time.Second, "NvidiaXID13Warning", "", time.Minute},
				{20 * time.Second, ReasonReady, "", 0},
				{time.Minute, ReasonReady, "", 0},
			},
		},
		{
			"the interval restarts at each publish",
			time.Minute,
			[]offer{
				{0, ReasonReady, ReasonReady, 0},
				{30 * time.Second, "NvidiaXID79Error", "", time.Minute},
				{time.Minute, "NvidiaXID79Error", "NvidiaXID79Error", 0},
				{90 * time.Second, ReasonReady, "", 2 * time.Minute},
				{2 * time.Minute, ReasonReady, ReasonReady, 0},
			},
		},
		{
			"a clock that steps back holds until the interval ends",
			time.Minute,
			[]offer{
				{time.Minute, ReasonReady, ReasonReady, 0},
				{0, "NvidiaXID79Error", "", 2 * time.Minute},
			},
		},
		{
			"no damping publishes every change at once",
			0,
			[]offer{
				{0, ReasonReady, ReasonReady, 0},
				{0, "NvidiaXID79Error", "NvidiaXID79Error", 0},
				{0, ReasonReady, ReasonReady, 0},
				{0, ReasonReady, "", 0},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.description, func(t *testing.T) {
			d := Damper{Interval: tt.interval}
			for i, o := range tt.offers {
				pub, retry := d.Offer(t0.Add(o.at), verdict(o.reason))
				got := ""
				if pub != nil {
					got = pub.Reason
				}
				if got != o.wantPublish {
					t.Errorf("offer %d (%s at %s): published %q, want %q", i, o.reason, o.at, got, o.wantPublish)
				}
				var wantRetry time.Time
				if o.wantRetry != 0 {
					wantRetry = t0.Add(o.wantRetry)
				}
				if !retry.Equal(wantRetry) {
					t.Errorf("offer %d (%s at %s): retry at %v, want %v", i, o.reason, o.at, retry, wantRetry)
				}
			}
		})
	}
}

// A storm: 100 different verdicts within one interval after a publish. The
// first change after the quiet interval goes out at once; the other 99 are
// held, and the latest is the one published when the interval ends.
func TestDamperHoldsAStorm(t *testing.T) {
	d := Damper{Interval: time.Minute}
	if pub, _ := d.Offer(t0, verdict(ReasonReady)); pub == nil {
		t.Fatal("the first verdict was held")
	}
	start := t0.Add(10 * time.Minute)
	published := 0
	var retryAt time.Time
	var last Verdict
	for i := range 100 {
		v := verdict(fmt.Sprintf("NvidiaXID%dError", i))
		last = v
		pub, retry := d.Offer(start.Add(time.Duration(i)*100*time.Millisecond), v)
		if pub != nil {
			published++
			if i != 0 {
				t.Errorf("offer %d was published within the interval", i)
			}
			continue
		}
		if i > 0 && !retry.Equal(start.Add(time.Minute)) {
			t.Errorf("offer %d: retry at %v, want the interval's end %v", i, retry, start.Add(time.Minute))
		}
		retryAt = retry
	}
	if published != 1 {
		t.Fatalf("%d verdicts published during the storm, want 1 (the first change)", published)
	}
	pub, retry := d.Offer(retryAt, last)
	if pub == nil || !pub.SameAs(last) {
		t.Fatalf("at the interval's end published %v, want the latest verdict %q", pub, last.Reason)
	}
	if !retry.IsZero() {
		t.Errorf("nothing is held after the publish, but retry at %v", retry)
	}
	if pub, _ := d.Offer(retryAt.Add(time.Second), last); pub != nil {
		t.Errorf("the latest verdict was published twice")
	}
}

func TestDamperPublishesACopy(t *testing.T) {
	d := Damper{Interval: time.Minute}
	v := verdict("NvidiaXID79Error")
	v.Unhealthy = []UnhealthyGPU{{GPURef: GPURef{Index: 1}, Reason: "NvidiaXID79Error"}}
	pub, _ := d.Offer(t0, v)
	pub.Reason = "changed by the caller"
	if again, _ := d.Offer(t0.Add(time.Hour), v); again != nil {
		t.Error("changing the published verdict changed what the damper remembers")
	}
}

func TestDamperKeepsItsOwnCopy(t *testing.T) {
	d := Damper{Interval: time.Minute}
	v := verdict("NvidiaXID79Error")
	v.Unhealthy = []UnhealthyGPU{{GPURef: GPURef{Index: 1}, Reason: "NvidiaXID79Error"}}
	pub, _ := d.Offer(t0, v)
	pub.Unhealthy[0].Index = 7
	v.Unhealthy[0].Reason = "changed"
	orig := verdict("NvidiaXID79Error")
	orig.Unhealthy = []UnhealthyGPU{{GPURef: GPURef{Index: 1}, Reason: "NvidiaXID79Error"}}
	if again, _ := d.Offer(t0.Add(time.Hour), orig); again != nil {
		t.Error("changing a verdict after offering it changed what the damper remembers")
	}
}
