package realtime

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"hmid/internal/apperr"
)

// The transport: frames are built once (gobwas/ws) and written with one
// system call that never waits. An event to 10,000 subscribers is one
// encoded frame and 10,000 write calls from the fan-out workers; only a
// socket that cannot take a frame at once gets a writer goroutine, until
// its backlog is written.

// textFrame encodes payload as one unmasked text frame (RFC 6455 §5.2;
// servers never mask).
func textFrame(payload []byte) []byte {
	return ws.MustCompileFrame(ws.NewTextFrame(payload))
}

// pingFrame is the keep-alive's ping, the same bytes for every connection.
var pingFrame = ws.MustCompileFrame(ws.NewPingFrame(nil))

// closeFrame encodes a close frame with a status code and reason (RFC 6455
// §5.5.1); a reason is cut to fit the 125 bytes of a control frame.
func closeFrame(code ws.StatusCode, reason string) []byte {
	if len(reason) > 123 {
		reason = reason[:123]
	}
	return ws.MustCompileFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(code, reason)))
}

// checkHandshake answers what the upgrader would refuse, in the API's error
// shape (RFC 6455 §4.2.1 lists what a client's handshake must carry).
func checkHandshake(w http.ResponseWriter, r *http.Request) error {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return apperr.Bad("this endpoint needs a WebSocket upgrade request (RFC 6455 §4.1)")
	}
	if !hasToken(r.Header.Values("Connection"), "upgrade") {
		return apperr.Bad("a WebSocket handshake needs Connection: Upgrade (RFC 6455 §4.2.1)")
	}
	if len(r.Header.Get("Sec-WebSocket-Key")) != 24 {
		return apperr.Bad("a WebSocket handshake needs a Sec-WebSocket-Key of 16 bytes in base64 (RFC 6455 §4.2.1)")
	}
	if r.Header.Get("Sec-WebSocket-Version") != "13" {
		w.Header().Set("Sec-WebSocket-Version", "13") // RFC 6455 §4.4
		return apperr.Bad("this server speaks WebSocket version 13 only")
	}
	return nil
}

// hasToken reports whether a comma-separated header holds token.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// closeCodeFor maps a read error to the close code that tells the client
// why (RFC 6455 §7.4.1), or 0 when the connection is simply gone.
func closeCodeFor(err error) (ws.StatusCode, string) {
	var pe ws.ProtocolError
	switch {
	case errors.Is(err, wsutil.ErrMessageTooLarge), errors.Is(err, wsutil.ErrFrameTooLarge):
		return ws.StatusMessageTooBig, "message too big"
	case errors.Is(err, wsutil.ErrInvalidUTF8):
		return ws.StatusInvalidFramePayloadData, "text is not UTF-8"
	case errors.As(err, &pe):
		return ws.StatusProtocolError, string(pe)
	}
	return 0, "" // end of stream or a broken socket: nobody to tell
}
