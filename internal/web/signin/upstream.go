package signin

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/auth"
	"hmid/internal/upstream"
	"hmid/internal/users"
	"hmid/internal/web"
)

// provider returns the configured and enabled provider of the {slug} of r,
// or renders the refusal (404 unknown, 403 disabled) and returns nil.
func (h *Pages) provider(w http.ResponseWriter, r *http.Request) upstream.Provider {
	t := web.Translator(web.Language(r))
	slug := chi.URLParam(r, "slug")
	var p upstream.Provider
	if h.Providers != nil {
		p, _ = h.Providers.Get(slug)
	}
	if p == nil || h.Flow == nil {
		h.Message(w, r, http.StatusNotFound, "title.error", t("upstream.unknown"))
		return nil
	}
	on, err := h.Auth.EnabledPlatforms(r.Context())
	if err != nil {
		h.Fail(w, r, err)
		return nil
	}
	if !on[p.Slug()] {
		h.Message(w, r, http.StatusForbidden, "title.error", fmt.Sprintf(t("upstream.disabled"), p.Name()))
		return nil
	}
	return p
}

// ProviderStart is GET /login/{slug}: it starts a sign-in with the provider
// and sends the browser there. return_to (a local path, or a pending
// /v1/oauth/authorize request) is kept with the state, so an OAuth flow
// resumes after the detour.
func (h *Pages) ProviderStart(w http.ResponseWriter, r *http.Request) {
	p := h.provider(w, r)
	if p == nil {
		return
	}
	to, err := h.Flow.Begin(r.Context(), w, r, p, h.SafeReturn(r.URL.Query().Get("return_to")))
	if err != nil {
		h.upstreamFailed(w, r, p.Name(), err, "/", false)
		return
	}
	h.Redirect(w, r, to)
}

// ProviderConnect is POST /login/{slug}: a signed-in user connects the
// provider's account to theirs. It is a form post of the account console
// (/account/linked) with the console's CSRF token, so another site cannot
// start it in the user's name; return_to (a local page) is where the
// Message page after the callback leads back to.
func (h *Pages) ProviderConnect(w http.ResponseWriter, r *http.Request) {
	s := h.sessionPost(w, r, web.ConsoleForm, func() string { return "/" })
	if s == nil {
		return
	}
	p := h.provider(w, r)
	if p == nil {
		return
	}
	back := h.SafeReturn(r.PostFormValue("return_to"))
	to, err := h.Flow.BeginLink(r.Context(), w, r, p, back, s.UserID)
	if err != nil {
		h.upstreamFailed(w, r, p.Name(), err, back, true)
		return
	}
	h.Redirect(w, r, to)
}

// ProviderCallback is GET /login/{slug}/callback, the provider's redirect
// URI: it checks the state (browser-bound, single use, ten minutes), redeems
// the code and signs the person in through the linking rule, or connects
// the account for a sign-in started with ProviderConnect. Every failure is
// a page that says what happened, and no session.
func (h *Pages) ProviderCallback(w http.ResponseWriter, r *http.Request) {
	p := h.provider(w, r)
	if p == nil {
		return
	}
	ctx := r.Context()
	m := auth.MetaFrom(r, web.Source)
	cb, err := h.Flow.Finish(ctx, r, p.Slug())
	if err != nil {
		back, connecting := "/", false
		if cb != nil {
			back, connecting = cb.ReturnTo, cb.LinkUser != ""
		}
		if errors.Is(err, upstream.ErrDenied) || errors.Is(err, upstream.ErrProvider) {
			h.Auth.ProviderFailed(ctx, p.Slug(), err.Error(), m)
		}
		h.upstreamFailed(w, r, p.Name(), err, back, connecting)
		return
	}
	id, err := p.Exchange(ctx, cb.Code, cb.Params)
	if err != nil {
		h.Auth.ProviderFailed(ctx, p.Slug(), err.Error(), m)
		h.upstreamFailed(w, r, p.Name(), err, cb.ReturnTo, cb.LinkUser != "")
		return
	}
	claim := users.Claim{
		Platform: p.Slug(), PlatformUserID: id.Subject, Name: firstOf(id.Username, id.DisplayName),
		Email: auth.NormalizeEmail(id.Email), EmailVerified: id.EmailVerified, AvatarURL: id.AvatarURL,
	}
	if cb.LinkUser != "" {
		h.connected(w, r, p, cb, claim, m)
		return
	}
	res, err := h.Auth.ProviderLogin(ctx, claim, m)
	if err != nil {
		code := h.Status(w, err)
		h.Render(w, r, code, "message", web.Outcome(code, web.View{Title: "title.error", ReturnTo: cb.ReturnTo}, h.ErrorTextIn(ctx, web.Language(r), err)))
		return
	}
	h.finishLogin(w, r, res, p.Slug(), cb.ReturnTo)
}

// connected finishes a ProviderConnect: the user who started it must still
// be the one signed in. The message page, also on a refusal, leads back to
// the page the connect was started from.
func (h *Pages) connected(w http.ResponseWriter, r *http.Request, p upstream.Provider, cb *upstream.Callback, c users.Claim, m auth.Meta) {
	t := web.Translator(web.Language(r))
	s := h.Session(r)
	if s == nil || s.UserID != cb.LinkUser {
		h.Message(w, r, http.StatusForbidden, "title.notconnected", t("upstream.connect.session"))
		return
	}
	out, err := h.Auth.Connect(r.Context(), s, c, m)
	if err != nil {
		h.connectFailed(w, r, p, s.UserID, err, cb.ReturnTo)
		return
	}
	text := fmt.Sprintf(t("upstream.connect.done"), p.Name())
	if !out.Linked {
		text = fmt.Sprintf(t("upstream.connect.already"), p.Name())
	}
	h.Render(w, r, http.StatusOK, "message", web.View{Title: "title.connected", Notice: text, ReturnTo: cb.ReturnTo, LoggedIn: true})
}

// connectFailed renders a refused connect as what it is: titled "not
// connected" and in the page's alert, never in the green box of a success.
// A 409 says which rule refused it. An account signs in to one user only,
// so one that another user holds cannot be added; and a user has one
// account per platform. The service checks the holder first, so a user who
// has no account on the platform yet was refused for the holder; one who
// has is told to unlink theirs first, which is true either way and the
// step that comes next.
func (h *Pages) connectFailed(w http.ResponseWriter, r *http.Request, p upstream.Provider, userID string, err error, returnTo string) {
	ctx, lang := r.Context(), web.Language(r)
	t := web.Translator(lang)
	text := h.ErrorTextIn(ctx, lang, err)
	if apperr.KindOf(err) == apperr.Conflict {
		text = fmt.Sprintf(t("upstream.connect.taken"), p.Name())
		if linked, lerr := h.Auth.LinkedPlatforms(ctx, userID); lerr == nil && linked[p.Slug()] {
			text = fmt.Sprintf(t("upstream.connect.second"), p.Name())
		}
	}
	code := h.Status(w, err)
	h.Render(w, r, code, "message", web.Outcome(code, web.View{Title: "title.notconnected", ReturnTo: returnTo, LoggedIn: true}, text))
}

// upstreamFailed renders a failed provider sign-in: what went wrong in
// words, and a way back to the login page that keeps returnTo; for a
// connect (the person is signed in) the way back is returnTo itself.
func (h *Pages) upstreamFailed(w http.ResponseWriter, r *http.Request, name string, err error, returnTo string, connecting bool) {
	t := web.Translator(web.Language(r))
	code, key, title := http.StatusBadGateway, "upstream.provider", "title.error"
	switch {
	case errors.Is(err, upstream.ErrDenied):
		// The person said no at the provider: nothing went wrong.
		code, key, title = http.StatusForbidden, "upstream.denied", "title.cancelled"
	case errors.Is(err, upstream.ErrStateExpired):
		code, key = http.StatusBadRequest, "upstream.expired"
	case errors.Is(err, upstream.ErrStateReplayed):
		code, key = http.StatusBadRequest, "upstream.replayed"
	case errors.Is(err, upstream.ErrStateBrowser), errors.Is(err, upstream.ErrStateInvalid):
		code, key = http.StatusBadRequest, "upstream.state"
	case errors.Is(err, upstream.ErrCallback):
		code, key = http.StatusBadRequest, "upstream.callback"
	case errors.Is(err, upstream.ErrProvider):
		h.Log.WarnContext(r.Context(), "upstream sign-in failed", "error", err.Error())
	default:
		// Not the provider's fault: the cache or the database.
		h.Fail(w, r, apperr.Unavailablef("%s", err.Error()))
		return
	}
	h.Render(w, r, code, "message", web.Outcome(code, web.View{Title: title, ReturnTo: returnTo, LoggedIn: connecting}, fmt.Sprintf(t(key), name)))
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
