package httpx

import (
	"bytes"
	"io"
	"net/http"

	"hmid/internal/apperr"
)

// The helpers below are the tail and head every REST handler shares: read
// the body, call the service, answer with its result or its error. A
// handler is then its own steps only:
//
//	var in Input
//	if !httpx.Bind(w, r, &in) {
//		return
//	}
//	v, err := h.S.Create(r.Context(), in)
//	httpx.Respond(w, r, http.StatusCreated, v, err)

// Bind decodes the JSON body into dst as Decode does. When the body is
// refused it writes the error and returns false, and the handler returns.
func Bind(w http.ResponseWriter, r *http.Request, dst any) bool {
	if err := Decode(r, dst); err != nil {
		Error(w, r, err)
		return false
	}
	return true
}

// Respond writes err when it is not nil, else data as a resource with
// status (WriteResource).
func Respond(w http.ResponseWriter, r *http.Request, status int, data any, err error) {
	if err != nil {
		Error(w, r, err)
		return
	}
	WriteResource(w, r, status, data)
}

// RespondAt writes err when it is not nil, else data as a resource whose
// self link is selfPath (WriteResourceAt), for creations.
func RespondAt(w http.ResponseWriter, r *http.Request, status int, data any, selfPath string, err error) {
	if err != nil {
		Error(w, r, err)
		return
	}
	WriteResourceAt(w, r, status, data, selfPath)
}

// RespondList writes err when it is not nil, else one page of a list
// (WriteList).
func RespondList(w http.ResponseWriter, r *http.Request, data any, p Page, total int, err error) {
	if err != nil {
		Error(w, r, err)
		return
	}
	WriteList(w, r, data, p, total)
}

// RespondJSON writes err when it is not nil, else v as bare JSON with
// status, for the answers the spec shows without an envelope.
func RespondJSON(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	if err != nil {
		Error(w, r, err)
		return
	}
	JSON(w, status, v)
}

// RespondEmpty writes err when it is not nil, else 204 No Content.
func RespondEmpty(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		Error(w, r, err)
		return
	}
	NoContent(w)
}

// DecodeOptional decodes a JSON body that may be absent or empty (a POST
// whose fields are all optional); a body that is there is read as Decode
// reads it.
func DecodeOptional(r *http.Request, dst any) error {
	if r.Body == nil {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return apperr.Bad("request body could not be read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return DecodeBytes(body, dst)
}
