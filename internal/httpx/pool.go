package httpx

import (
	"bytes"
	"sync"
)

// bufPool recycles response buffers: JSON encoding is on every hot path.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}
