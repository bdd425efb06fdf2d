package account

import (
	"context"
	"net/http"
	"strings"
	"time"

	"hmid/internal/auth"
	"hmid/internal/authn"
	"hmid/internal/users"
	"hmid/internal/web"
)

// The state of the account a person should see on /account (issue 22):
// until the address they sign in with is verified, a notice with a button
// that mails a new link (POST /account/email/verification, the twin of
// POST /v1/auth/verify-email/resend), and whether each of their addresses
// is verified; while their account is scheduled for deletion, a notice
// with the button that cancels it (POST /account/data/deletion/cancel).

// accountState is what the notices and badges of /account read.
type accountState struct {
	// SignInVerified: the address of the email sign-in is verified (only
	// read when the view's EmailLogin is set).
	SignInVerified bool
	// ContactVerified: the user's address is verified on one of their
	// sign-in accounts.
	ContactVerified bool
	// DeletionAt is when a requested deletion takes place, nil for none.
	DeletionAt *time.Time
}

// state reads the account state of u.
func (pp *ProfilePages) state(ctx context.Context, u users.User) (accountState, error) {
	st := accountState{DeletionAt: u.ScheduledDeletionAt}
	if si, ok, err := pp.Manage.EmailSignInOf(ctx, u.ID); err != nil {
		return st, err
	} else if ok {
		st.SignInVerified = si.Verified
	}
	if u.Email != nil {
		owner, _, err := users.EmailOwner(ctx, pp.Users.DB, strings.ToLower(*u.Email))
		if err != nil {
			return st, err
		}
		st.ContactVerified = owner == u.ID
	}
	return st, nil
}

// ResendVerification is POST /account/email/verification (POST
// /v1/auth/verify-email/resend): a new link to the address the user signs
// in with.
func (pp *ProfilePages) ResendVerification(w http.ResponseWriter, r *http.Request) {
	pp.H.Act(w, r, web.Action{Form: "verify", To: "/account",
		Call: func(p *authn.Principal) (string, error) {
			_, err := pp.H.Auth.ResendVerification(r.Context(), p.UserID, auth.MetaFrom(r, web.Source))
			return "profile.verify.sent", err
		},
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			pp.render(w, r, pp.H.Status(w, err), pp.H.ErrorText(r, err), nil)
		}})
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"profile.verify.title":    "Please verify your email address",
			"profile.verify.text":     "We sent a link to %s. Until you follow it, the address is not confirmed as yours: a sign-in with a provider that vouches for it could take it over. The link works for 24 hours.",
			"profile.verify.resend":   "Send a new link",
			"profile.verify.sent":     "A new link was sent. It works for 24 hours and replaces the earlier ones.",
			"profile.verified":        "Verified",
			"profile.unverified":      "Not verified",
			"profile.deletion.title":  "Your account is scheduled for deletion",
			"profile.deletion.text":   "It will be deleted for good on %s. Until then you can keep it.",
			"profile.deletion.cancel": "Keep my account",
		},
		"de": {
			"profile.verify.title":    "Bitte bestätigen Sie Ihre E-Mail-Adresse",
			"profile.verify.text":     "Wir haben einen Link an %s gesendet. Bis Sie ihm folgen, ist die Adresse nicht als Ihre bestätigt: Eine Anmeldung über einen Anbieter, der sie bestätigt, könnte sie übernehmen. Der Link gilt 24 Stunden.",
			"profile.verify.resend":   "Neuen Link senden",
			"profile.verify.sent":     "Ein neuer Link wurde gesendet. Er gilt 24 Stunden und ersetzt die früheren.",
			"profile.verified":        "Bestätigt",
			"profile.unverified":      "Nicht bestätigt",
			"profile.deletion.title":  "Ihr Konto ist zur Löschung vorgemerkt",
			"profile.deletion.text":   "Es wird am %s endgültig gelöscht. Bis dahin können Sie es behalten.",
			"profile.deletion.cancel": "Mein Konto behalten",
		},
	})
}
