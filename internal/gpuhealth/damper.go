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

	published   *Verdict  // the last verdict published; nil before the first
	publishedAt time.Time // when it was published
	held        *Verdict  // the latest verdict held back, nil when none
}

// Offer gives the damper the current verdict. It returns the verdict to
// publish now, or nil to hold; when it holds a change, retryAt is when to
// offer again (the end of the interval); it is zero when nothing is held.
// An offer at or after retryAt publishes the verdict offered then, so the
// caller offers its latest verdict at retryAt.
func (d *Damper) Offer(now time.Time, v Verdict) (publish *Verdict, retryAt time.Time) {
	if d.published != nil && v.SameAs(*d.published) {
		// Back to what is published (or nothing new): nothing to change.
		d.held = nil
		return nil, time.Time{}
	}
	if d.published == nil || !now.Before(d.publishedAt.Add(d.Interval)) {
		out := v
		d.published, d.publishedAt, d.held = &out, now, nil
		ret := v
		return &ret, time.Time{}
	}
	held := v
	d.held = &held
	return nil, d.publishedAt.Add(d.Interval)
}
