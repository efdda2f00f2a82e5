package gpuhealth

import "time"

// Damper limits how often the published verdict changes: at most once per
// Interval. The first change after a quiet Interval is published at once;
// changes within the Interval are held, and the latest one is published
// when the Interval ends. A verdict the same as the published one
// (Verdict.SameAs) is never published again. The zero Damper publishes
// every change at once.
//
// A Damper is not safe for concurrent use.
type Damper struct {
	// Interval is the shortest time between two published changes.
	Interval time.Duration

	published   *Verdict  // a copy of the last verdict published; nil before the first
	publishedAt time.Time // when it was published
}

// Offer gives the damper the current verdict. It returns the verdict to
// publish now, or nil to hold; when it holds a change, retryAt is when to
// offer again (the end of the interval); it is zero when nothing is held.
// The damper keeps no held verdict: the caller offers its latest verdict
// at retryAt, and that one is published, so the latest change wins.
func (d *Damper) Offer(now time.Time, v Verdict) (publish *Verdict, retryAt time.Time) {
	if d.published != nil && v.SameAs(*d.published) {
		// Nothing new, or back to what is published: nothing to change.
		return nil, time.Time{}
	}
	if d.published == nil || !now.Before(d.publishedAt.Add(d.Interval)) {
		kept, out := v.clone(), v.clone()
		d.published, d.publishedAt = &kept, now
		return &out, time.Time{}
	}
	return nil, d.publishedAt.Add(d.Interval)
}
