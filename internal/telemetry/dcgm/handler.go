package dcgm

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// AgeHeader is the response header that says how old the served pass is,
// in seconds: the age is not a DCGM field, so it is not a metric.
const AgeHeader = "X-Sample-Age-Seconds"

// Handler serves GET /metrics (the exposition) and GET /healthz ("ok" while
// the process serves); any other path is 404. /metrics answers 503 when
// NVML finds no driver and 500 when a sample fails, so Prometheus' up turns
// 0 and the GPU series go stale rather than freeze.
func (e *Exporter) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", e.serveMetrics)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	return mux
}

func (e *Exporter) serveMetrics(w http.ResponseWriter, r *http.Request) {
	scrape, err := e.Scrape(r.Context())
	if err != nil {
		if r.Context().Err() != nil {
			return // the scraper left
		}
		var noDriver *NoDriverError
		if errors.As(err, &noDriver) {
			http.Error(w, noDriver.Error(), http.StatusServiceUnavailable)
			return
		}
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	age := e.opts.Now().Sub(scrape.At)
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set(AgeHeader, strconv.FormatFloat(age.Seconds(), 'f', 3, 64))
	_, _ = w.Write(scrape.Body)
}
