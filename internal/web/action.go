package web

import (
	"errors"
	"net/http"

	"hmid/internal/apperr"
	"hmid/internal/authn"
)

// The shape of a console form post (a page action), written once: the
// post is read and its CSRF token checked (ConsolePost), a destructive
// form's confirmation box must be ticked (Confirmed: the guard that works
// without the script's confirm dialog), the form is validated and the
// service called, and the browser is redirected with a flash message
// (Done, POST-redirect-GET) or the page is drawn again with the refusal at
// its field (FormRefusal). A new page action is its service call, its
// template and its texts.

// Action is one console form post.
type Action struct {
	// Form names the form on its page: the panel a refusal is shown in.
	Form string
	// Confirm is the field a missing confirmation is shown at; "" when the
	// action needs none. Unconfirmed is the page's text for it.
	Confirm, Unconfirmed string
	// Call validates the form and calls the service for the signed-in
	// principal p, and returns the message key of the flash shown after
	// it. Input the service never sees (a duration that is no number) is
	// refused with an *Invalid.
	Call func(p *authn.Principal) (flash string, err error)
	// To is the page the browser is sent to after the action.
	To string
	// Next, when set, names that page after Call instead of To (a created
	// role's own page).
	Next func() string
	// Answer, when set, answers a success instead of the redirect to To
	// (a page that shows a new secret once).
	Answer func()
	// Refuse draws the page again with err at the form Form.
	Refuse func(w http.ResponseWriter, r *http.Request, form string, err error)
}

// Act runs the console form post a.
func (h *Handler) Act(w http.ResponseWriter, r *http.Request, a Action) {
	p := h.ConsolePost(w, r)
	if p == nil {
		return
	}
	if a.Confirm != "" && !Confirmed(r) {
		a.Refuse(w, r, a.Form, &Invalid{Field: a.Confirm, Key: a.Unconfirmed})
		return
	}
	flash, err := a.Call(p)
	if err != nil {
		a.Refuse(w, r, a.Form, err)
		return
	}
	if a.Answer != nil {
		a.Answer()
		return
	}
	to := a.To
	if a.Next != nil {
		to = a.Next()
	}
	h.Done(w, r, to, flash)
}

// Confirmed reports whether a destructive form's confirmation box was
// ticked: the guard that works without the script's confirm dialog.
func Confirmed(r *http.Request) bool { return r.PostFormValue("confirm") == "yes" }

// Invalid is form input a page refuses before any service sees it (a
// missing confirmation, a number that is none): Key is the page's text for
// it, shown at Field. It is answered 400.
type Invalid struct{ Field, Key string }

func (e *Invalid) Error() string { return "invalid form field " + e.Field }

// FormRefusal is how a refused form post shows: the status, the text above
// the form and the error at its field. A field the service or the page
// (*Invalid) named gets its error there, and the page's sentence fixKey
// ("correct the marked field") goes above; any other error is the page's.
func (h *Handler) FormRefusal(w http.ResponseWriter, r *http.Request, err error, fixKey string) (int, string, FormError) {
	t := Translator(h.UserLanguage(r, authn.From(r.Context())))
	var inv *Invalid
	if errors.As(err, &inv) {
		return http.StatusBadRequest, t(fixKey), FormError{Field: inv.Field, Text: t(inv.Key)}
	}
	text := h.ErrorText(r, err)
	status := h.Status(w, err)
	if field := apperr.FieldOf(err); field != "" {
		return status, t(fixKey), FormError{Field: field, Text: text}
	}
	return status, text, FormError{}
}

// PageRefusal is how a refused post shows on a page without fields to
// mark: the status and the text above the page (an *Invalid's own text,
// answered 400, else the error's).
func (h *Handler) PageRefusal(w http.ResponseWriter, r *http.Request, err error) (int, string) {
	var inv *Invalid
	if errors.As(err, &inv) {
		return http.StatusBadRequest, Translator(h.UserLanguage(r, authn.From(r.Context())))(inv.Key)
	}
	return h.Status(w, err), h.ErrorText(r, err)
}
