package poll

import "time"

// Schedule is when the checks of a wait happen: the first after First
// (zero: at once), the second Initial after it, each later one Factor
// times the previous pause, never more than Max apart.
type Schedule struct {
	First   time.Duration
	Initial time.Duration
	Factor  float64
	Max     time.Duration
}

// Next is the pause after one of prev (zero: none yet, so Initial).
func (s Schedule) Next(prev time.Duration) time.Duration {
	if prev <= 0 {
		return s.Initial
	}
	return min(time.Duration(float64(prev)*s.Factor), s.Max)
}
