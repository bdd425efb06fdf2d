package httpx

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// SetRateLimit writes the RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset headers (draft-ietf-httpapi-ratelimit-headers; DECISIONS.md,
// REST conventions) of the limit that applies to a request: the burst, what
// is left of it, and the seconds, rounded up, until all of it is back.
// Retry-After on 429 comes from the error (see Error).
func SetRateLimit(w http.ResponseWriter, limit, remaining int, reset time.Duration) {
	h := w.Header()
	h.Set("RateLimit-Limit", strconv.Itoa(limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("RateLimit-Reset", strconv.Itoa(int(math.Ceil(reset.Seconds()))))
}
