package account

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"hmid/internal/auth"
	"hmid/internal/authn"
	"hmid/internal/passkey"
	"hmid/internal/platforms"
	"hmid/internal/twofactor"
	"hmid/internal/web"
)

// SecurityPages is /account/security: the password change and two-factor
// authentication (setup with a QR code, verification, backup codes,
// regeneration, disabling), with the requirement of the user's roles and
// login platform at the top. Every action calls the service its REST route
// calls: auth.Service.ChangePassword (POST /v1/users/me/password) and
// twofactor.Service (/v1/users/me/2fa/*).
//
// Secrets (the TOTP secret at setup, the backup codes) appear only in the
// answer of the POST that created them: the page is rendered there, not
// redirected to, and every page is Cache-Control: no-store.
type SecurityPages struct {
	H         *web.Handler
	TwoFactor *twofactor.Service
	// Platforms lists the login platforms a setup may be tied to.
	Platforms *platforms.Service
	// Passkeys are the user's passkeys (passkeys.go); nil: not offered.
	Passkeys *passkey.Service
}

// The code forms of an enabled two-factor authentication, to show a code's
// error at its own form (the template names them too).
const (
	codeFormRegenerate = "regenerate"
	codeFormDisable    = "disable"
)

// securityData is what templates/account_security.html reads.
type securityData struct {
	HasPassword bool
	// Password is the rules in force and the strength hint of the new password.
	Password web.PasswordHint
	// CurrentErr and NewErr are the field errors of the password form.
	CurrentErr, NewErr string

	Status twofactor.Status
	Req    twofactor.Requirement
	// RequiredRoles joins the names of the roles that require two-factor
	// authentication.
	RequiredRoles string
	// Platforms are the enabled platforms that support two-factor
	// authentication; the setup offers a choice when there is more than one.
	Platforms []platforms.Platform

	// Setup is the setup just started (the answer of its POST).
	Setup *setupView
	// Pending asks again for the code of a setup whose verification failed
	// (its secret is not shown again; starting over shows a new one).
	Pending bool
	// Codes are the backup codes just issued (the answer of verify or
	// regenerate).
	Codes *codesView

	// CodeErr is the error of a code; CodeForm names its form when two-factor
	// authentication is on (with Pending, it is the verification's).
	CodeForm, CodeErr string

	// Passkeys is the passkey section; PasskeyErr the error of the rename
	// form of passkey PasskeyErrID.
	Passkeys                 passkeysView
	PasskeyErrID, PasskeyErr string

	// flash is the message key of the confirmation of a page rendered in
	// the answer of its POST (no redirect carries a flash there).
	flash string
}

// setupView is a started setup as the page shows it.
type setupView struct {
	QR     template.URL // data:image/png;base64,… made by twofactor.Service.Setup
	URI    template.URL // otpauth://totp/…, opens the authenticator app on a phone
	Secret string       // base32, for manual entry
	// Groups is Secret in blocks of four, easier to type.
	Groups    []string
	ExpiresAt time.Time
}

// codesView is a set of backup codes just issued.
type codesView struct {
	Codes []string
	// Download is a data: URI of the codes as a text file; the download
	// happens in the browser, from this answer, so the codes never travel
	// again (they are hashed at rest and cannot be shown twice).
	Download template.URL
	// Regenerated: they replace earlier codes (else two-factor
	// authentication was just turned on).
	Regenerated bool
}

// Show is GET /account/security.
func (sp *SecurityPages) Show(w http.ResponseWriter, r *http.Request) {
	sp.render(w, r, http.StatusOK, &securityData{}, "")
}

// render fills d with the user's state and renders the page.
func (sp *SecurityPages) render(w http.ResponseWriter, r *http.Request, status int, d *securityData, errText string) {
	v := web.ConsoleView{Title: "title.security", Section: "security", Error: errText}
	if d.flash != "" {
		v.Flash = sp.t(r)(d.flash)
	}
	sp.H.Show(w, r, status, "account_security", v, func() (any, error) { return d, sp.fill(r, d) })
}

// fill fills d with the signed-in user's password, two-factor and passkey state.
func (sp *SecurityPages) fill(r *http.Request, d *securityData) (err error) {
	ctx := r.Context()
	p := authn.From(ctx)
	if d.HasPassword, err = sp.H.Auth.HasPassword(ctx, p.UserID); err != nil {
		return err
	}
	if d.Status, err = sp.TwoFactor.Status(ctx, p, ""); err != nil {
		return err
	}
	if d.Req, err = sp.TwoFactor.Requirement(ctx, p, ""); err != nil {
		return err
	}
	d.RequiredRoles = strings.Join(d.Req.RequiredByRoles, ", ")
	list, err := sp.Platforms.List(ctx, true)
	if err != nil {
		return err
	}
	for _, pl := range list {
		if pl.TwoFactorSupported {
			d.Platforms = append(d.Platforms, pl)
		}
	}
	if err := sp.passkeys(r, d); err != nil {
		return err
	}
	d.Password = web.NewPasswordHint(sp.H.UserLanguage(r, p), sp.H.Auth.PasswordRules())
	return nil
}

// t is the translator of the page's reader.
func (sp *SecurityPages) t(r *http.Request) func(string) string {
	return web.Translator(sp.H.UserLanguage(r, authn.From(r.Context())))
}

// securityClient is the origin of a page request for the two-factor audit records.
func securityClient(r *http.Request) twofactor.Client {
	m := auth.MetaFrom(r, web.Source)
	return twofactor.Client{IPAddress: m.IP, UserAgent: m.UserAgent, SourceService: m.Source}
}

// ChangePassword is POST /account/security/password.
func (sp *SecurityPages) ChangePassword(w http.ResponseWriter, r *http.Request) {
	p := sp.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	_, err := sp.H.Auth.ChangePassword(r.Context(), p, auth.PasswordChange{
		Current: r.PostFormValue("current_password"), New: r.PostFormValue("new_password"),
	}, auth.MetaFrom(r, web.Source))
	if err == nil {
		sp.H.Done(w, r, "/account/security", "security.pw.changed")
		return
	}
	t := sp.t(r)
	d := &securityData{}
	errText := ""
	switch {
	case errors.Is(err, auth.ErrWrongPassword):
		d.CurrentErr = t("security.pw.wrong")
	case errors.Is(err, auth.ErrCurrentRequired):
		d.CurrentErr = t("security.pw.currentrequired")
	case errors.Is(err, auth.ErrNewPassword):
		d.NewErr = web.PasswordProblem(sp.H.UserLanguage(r, authn.From(r.Context())), err, sp.H.Auth.PasswordRules())
		if d.NewErr == "" {
			d.NewErr = fmt.Sprintf(t("security.pw.rules"), sp.H.Auth.PasswordRules().MinLength)
		}
	case errors.Is(err, auth.ErrSamePassword):
		d.NewErr = t("security.pw.same")
	case errors.Is(err, auth.ErrNoPassword):
		errText = t("security.pw.none")
	default:
		errText = sp.H.ErrorText(r, err)
	}
	sp.render(w, r, sp.H.Status(w, err), d, errText)
}

// Setup is POST /account/security/2fa/setup: the answer shows the QR code
// and the secret of the new setup, and asks for the first code.
func (sp *SecurityPages) Setup(w http.ResponseWriter, r *http.Request) {
	p := sp.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	res, err := sp.TwoFactor.Setup(r.Context(), p, twofactor.SetupInput{PlatformID: r.PostFormValue("platform_id")})
	if err != nil {
		sp.render(w, r, sp.H.Status(w, err), &securityData{}, sp.H.ErrorText(r, err))
		return
	}
	sp.render(w, r, http.StatusOK, &securityData{Setup: &setupView{
		// Both come from the service, never from the request.
		QR: template.URL(res.QRCodeImage), URI: template.URL(res.QRCodeURL),
		Secret: res.Secret, Groups: secretGroups(res.Secret, 4), ExpiresAt: res.ExpiresAt,
	}}, "")
}

// Verify is POST /account/security/2fa/verify: a right code turns
// two-factor authentication on, and the answer shows the backup codes.
func (sp *SecurityPages) Verify(w http.ResponseWriter, r *http.Request) {
	sp.codesPost(w, r, &securityData{Pending: true}, sp.TwoFactor.Verify, false, "security.2fa.enabled")
}

// Regenerate is POST /account/security/2fa/backup-codes: new backup codes
// for a TOTP code, shown in the answer.
func (sp *SecurityPages) Regenerate(w http.ResponseWriter, r *http.Request) {
	sp.codesPost(w, r, &securityData{CodeForm: codeFormRegenerate}, sp.TwoFactor.RegenerateBackupCodes, true, "security.codes.regenerated")
}

// codesPost is the shape of the forms that trade a TOTP code for backup
// codes (verify, regenerate): issue is called with the posted code for the
// signed-in user, and the answer shows the codes once, or draws the page
// again with the code's error in refused.
func (sp *SecurityPages) codesPost(w http.ResponseWriter, r *http.Request, refused *securityData,
	issue func(ctx context.Context, p *authn.Principal, userID, code string, c twofactor.Client) (twofactor.CodesResult, error),
	regenerated bool, flash string) {
	p := sp.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	res, err := issue(r.Context(), p, "", r.PostFormValue("code"), securityClient(r))
	if err != nil {
		status := sp.H.Status(w, err)
		refused.CodeErr = sp.H.ErrorText(r, err)
		sp.render(w, r, status, refused, "")
		return
	}
	sp.showCodes(w, r, res.BackupCodes, regenerated, flash)
}

// Disable is POST /account/security/2fa/disable, with a TOTP or backup code
// and the confirmation box (the page's guard for those without script).
func (sp *SecurityPages) Disable(w http.ResponseWriter, r *http.Request) {
	p := sp.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	if r.PostFormValue("confirm") != "yes" {
		sp.render(w, r, http.StatusBadRequest, &securityData{CodeForm: codeFormDisable, CodeErr: sp.t(r)("security.2fa.confirmneeded")}, "")
		return
	}
	if _, err := sp.TwoFactor.Disable(r.Context(), p, "", r.PostFormValue("code"), securityClient(r)); err != nil {
		sp.render(w, r, sp.H.Status(w, err), &securityData{CodeForm: codeFormDisable, CodeErr: sp.H.ErrorText(r, err)}, "")
		return
	}
	sp.H.Done(w, r, "/account/security", "security.2fa.disabled")
}

// showCodes renders the page with backup codes just issued, once.
func (sp *SecurityPages) showCodes(w http.ResponseWriter, r *http.Request, codes []string, regenerated bool, flash string) {
	t := sp.t(r)
	var b strings.Builder
	fmt.Fprintf(&b, t("security.codes.filehead")+"\n", sp.H.Auth.Username(r.Context(), authn.From(r.Context()).UserID))
	b.WriteString(t("security.codes.filenote") + "\n\n")
	for _, c := range codes {
		b.WriteString(c + "\n")
	}
	d := &securityData{Codes: &codesView{
		Codes: codes, Regenerated: regenerated,
		// Percent-encoded text (RFC 2397): the codes' alphabet and the
		// fixed texts, nothing taken from the request.
		Download: template.URL("data:text/plain;charset=utf-8," + url.PathEscape(b.String())),
	}}
	d.flash = flash
	sp.render(w, r, http.StatusOK, d, "")
}

// secretGroups cuts s into blocks of n characters.
func secretGroups(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"title.security":              "Security",
			"security.req.title":          "Two-factor authentication is required for your account",
			"security.req.role":           "Your role %s requires it.",
			"security.req.roles":          "Your roles %s require it.",
			"security.req.platform":       "Signing in with %s requires it.",
			"security.req.act":            "Set it up now: it takes a minute with an authenticator app on your phone.",
			"security.req.inprogress":     "You are setting it up below.",
			"security.req.button":         "Set it up now",
			"security.req.kept":           "Your roles or your sign-in platform require two-factor authentication, so keep it on.",
			"security.2fa.title":          "Two-factor authentication",
			"security.2fa.on":             "On",
			"security.2fa.off":            "Off",
			"security.2fa.intro":          "Protect your account with a second step at sign-in: a 6-digit code from an authenticator app on your phone (such as Aegis, Google Authenticator, Microsoft Authenticator or 1Password). Even someone who knows your password cannot sign in without it.",
			"security.2fa.platform":       "Platform",
			"security.2fa.start":          "Set up two-factor authentication",
			"security.2fa.since":          "On since",
			"security.2fa.remaining":      "Unused backup codes",
			"security.2fa.few":            "Few left: make new ones",
			"security.2fa.totp":           "Code from your authenticator app",
			"security.2fa.anycode":        "Code from your authenticator app, or a backup code",
			"security.2fa.disabletitle":   "Turn off two-factor authentication",
			"security.2fa.disablehelp":    "Signing in will need only your password again, and your backup codes stop working.",
			"security.2fa.disableconfirm": "Turn off two-factor authentication?",
			"security.2fa.disablecheck":   "Yes, turn off two-factor authentication",
			"security.2fa.disable":        "Turn off",
			"security.2fa.confirmneeded":  "Tick the box to confirm that you want to turn off two-factor authentication.",
			"security.2fa.enabled":        "Two-factor authentication is on.",
			"security.2fa.disabled":       "Two-factor authentication is off.",
			"security.setup.step1":        "1. Add hmid to your authenticator app",
			"security.setup.scan":         "Scan this QR code with the app.",
			"security.setup.qralt":        "QR code to add hmid to your authenticator app",
			"security.setup.openapp":      "On this phone? Open the authenticator app directly",
			"security.setup.manual":       "Cannot scan? Enter this key in the app instead (time-based):",
			"security.setup.copy":         "Copy key",
			"security.setup.step2":        "2. Enter the code the app shows",
			"security.setup.code":         "6-digit code",
			"security.setup.expires":      "This setup expires at %s.",
			"security.setup.verify":       "Turn on",
			"security.setup.again":        "Lost the QR code, or did the setup expire? Start over with a new key.",
			"security.setup.restart":      "Start over",
			"security.copied":             "Copied",
			"security.codes.title":        "Your backup codes",
			"security.codes.newtitle":     "Your new backup codes",
			"security.codes.once":         "Save these codes now. They are shown only this once.",
			"security.codes.use":          "If you lose your phone, sign in with one of these codes instead of a code from the app. Each code works once.",
			"security.codes.copy":         "Copy codes",
			"security.codes.download":     "Download as text file",
			"security.codes.done":         "I have saved my codes",
			"security.codes.filehead":     "Backup codes of the hmid account %s",
			"security.codes.filenote":     "Each code works once, in place of a code from your authenticator app.",
			"security.codes.regentitle":   "New backup codes",
			"security.codes.regenhelp":    "Make new backup codes when you have used many or lost them. The old codes stop working.",
			"security.codes.regenconfirm": "Make new backup codes? Your old codes stop working.",
			"security.codes.regenerate":   "Make new backup codes",
			"security.codes.regenerated":  "New backup codes were made; the old ones no longer work.",
			"security.pw.title":           "Password",
			"security.pw.intro":           "After the change, every other device and browser signed in to your account is signed out, and you get a confirmation mail.",
			"security.pw.current":         "Current password",
			"security.pw.help":            "At least %d characters.",
			"security.pw.submit":          "Change password",
			"security.pw.forgot":          "Forgot your current password? Reset it by mail",
			"security.pw.nopassword":      "You sign in with another service only, so your account has no password. To sign in with an email address and a password too, link them on your profile.",
			"security.pw.link":            "Link an email address and password",
			"security.pw.changed":         "Your password was changed. Every other session was signed out.",
			"security.pw.wrong":           "This is not your current password.",
			"security.pw.currentrequired": "Enter your current password.",
			"security.pw.rules":           "Choose a password of at least %d characters.",
			"security.pw.same":            "Choose a password different from your current one.",
			"security.pw.none":            "Your account has no password to change. Link an email address and a password on your profile first.",
			"security.pk.title":           "Passkeys",
			"security.2fa.bypasskey":      "Your passkey is your second factor: signing in with your password asks for it. An authenticator app adds a second way.",
			"security.pk.off":             "Passkeys are turned off on this server.",
			"security.pk.intro":           "A passkey signs you in with your phone, a security key or this device's screen lock, without a password. It cannot be phished, and it also serves as your second factor.",
			"security.pk.synced":          "Synced",
			"security.pk.device":          "This device only",
			"security.pk.added":           "Added",
			"security.pk.lastused":        "Last used",
			"security.pk.never":           "Never",
			"security.pk.newname":         "New name",
			"security.pk.rename":          "Rename",
			"security.pk.remove":          "Remove",
			"security.pk.removeconfirm":   "Remove this passkey? It will no longer sign you in.",
			"security.pk.none":            "You have no passkey yet.",
			"security.pk.addtitle":        "Add a passkey",
			"security.pk.confirm":         "For your security, confirm it's you first.",
			"security.pk.orcode":          "Or a code from your authenticator app",
			"security.pk.name":            "Name (optional)",
			"security.pk.namehelp":        "For example \"Work laptop\". Without a name, the kind of device is used.",
			"security.pk.add":             "Add a passkey",
			"security.pk.nojs":            "Adding a passkey needs JavaScript in this browser.",
			"security.pk.wait":            "Follow your browser's prompt to create the passkey…",
			"security.pk.cancelled":       "No passkey was added. You can try again.",
			"security.pk.signinagain":     "Sign out and in again, then add the passkey within ten minutes.",
			"security.pk.done":            "The passkey was added. You can now sign in with it.",
			"security.pk.renamed":         "The passkey was renamed.",
			"security.pk.removed":         "The passkey was removed.",
		},
		"de": {
			"title.security":              "Sicherheit",
			"security.req.title":          "Für Ihr Konto ist die Zwei-Faktor-Authentifizierung vorgeschrieben",
			"security.req.role":           "Ihre Rolle %s verlangt sie.",
			"security.req.roles":          "Ihre Rollen %s verlangen sie.",
			"security.req.platform":       "Die Anmeldung mit %s verlangt sie.",
			"security.req.act":            "Richten Sie sie jetzt ein: Mit einer Authenticator-App auf Ihrem Smartphone dauert das eine Minute.",
			"security.req.inprogress":     "Sie richten sie unten gerade ein.",
			"security.req.button":         "Jetzt einrichten",
			"security.req.kept":           "Ihre Rollen oder Ihre Anmeldeplattform verlangen die Zwei-Faktor-Authentifizierung; lassen Sie sie eingeschaltet.",
			"security.2fa.title":          "Zwei-Faktor-Authentifizierung",
			"security.2fa.on":             "Ein",
			"security.2fa.off":            "Aus",
			"security.2fa.intro":          "Schützen Sie Ihr Konto mit einem zweiten Schritt bei der Anmeldung: einem 6-stelligen Code aus einer Authenticator-App auf Ihrem Smartphone (etwa Aegis, Google Authenticator, Microsoft Authenticator oder 1Password). Selbst wer Ihr Passwort kennt, kann sich ohne ihn nicht anmelden.",
			"security.2fa.platform":       "Plattform",
			"security.2fa.start":          "Zwei-Faktor-Authentifizierung einrichten",
			"security.2fa.since":          "Eingeschaltet seit",
			"security.2fa.remaining":      "Unbenutzte Backup-Codes",
			"security.2fa.few":            "Nur noch wenige: Erstellen Sie neue",
			"security.2fa.totp":           "Code aus Ihrer Authenticator-App",
			"security.2fa.anycode":        "Code aus Ihrer Authenticator-App oder ein Backup-Code",
			"security.2fa.disabletitle":   "Zwei-Faktor-Authentifizierung ausschalten",
			"security.2fa.disablehelp":    "Für die Anmeldung genügt dann wieder Ihr Passwort, und Ihre Backup-Codes werden ungültig.",
			"security.2fa.disableconfirm": "Zwei-Faktor-Authentifizierung ausschalten?",
			"security.2fa.disablecheck":   "Ja, Zwei-Faktor-Authentifizierung ausschalten",
			"security.2fa.disable":        "Ausschalten",
			"security.2fa.confirmneeded":  "Setzen Sie das Häkchen, um zu bestätigen, dass Sie die Zwei-Faktor-Authentifizierung ausschalten möchten.",
			"security.2fa.enabled":        "Die Zwei-Faktor-Authentifizierung ist eingeschaltet.",
			"security.2fa.disabled":       "Die Zwei-Faktor-Authentifizierung ist ausgeschaltet.",
			"security.setup.step1":        "1. hmid zu Ihrer Authenticator-App hinzufügen",
			"security.setup.scan":         "Scannen Sie diesen QR-Code mit der App.",
			"security.setup.qralt":        "QR-Code, um hmid zu Ihrer Authenticator-App hinzuzufügen",
			"security.setup.openapp":      "Auf diesem Smartphone? Öffnen Sie die Authenticator-App direkt",
			"security.setup.manual":       "Scannen geht nicht? Geben Sie stattdessen diesen Schlüssel in der App ein (zeitbasiert):",
			"security.setup.copy":         "Schlüssel kopieren",
			"security.setup.step2":        "2. Den Code aus der App eingeben",
			"security.setup.code":         "6-stelliger Code",
			"security.setup.expires":      "Diese Einrichtung läuft am %s ab.",
			"security.setup.verify":       "Einschalten",
			"security.setup.again":        "QR-Code verloren oder Einrichtung abgelaufen? Beginnen Sie mit einem neuen Schlüssel von vorn.",
			"security.setup.restart":      "Von vorn beginnen",
			"security.copied":             "Kopiert",
			"security.codes.title":        "Ihre Backup-Codes",
			"security.codes.newtitle":     "Ihre neuen Backup-Codes",
			"security.codes.once":         "Speichern Sie diese Codes jetzt. Sie werden nur dieses eine Mal angezeigt.",
			"security.codes.use":          "Wenn Sie Ihr Smartphone verlieren, melden Sie sich mit einem dieser Codes statt mit einem Code aus der App an. Jeder Code gilt einmal.",
			"security.codes.copy":         "Codes kopieren",
			"security.codes.download":     "Als Textdatei herunterladen",
			"security.codes.done":         "Ich habe meine Codes gespeichert",
			"security.codes.filehead":     "Backup-Codes des hmid-Kontos %s",
			"security.codes.filenote":     "Jeder Code gilt einmal, anstelle eines Codes aus Ihrer Authenticator-App.",
			"security.codes.regentitle":   "Neue Backup-Codes",
			"security.codes.regenhelp":    "Erstellen Sie neue Backup-Codes, wenn Sie viele verbraucht oder sie verloren haben. Die alten Codes werden ungültig.",
			"security.codes.regenconfirm": "Neue Backup-Codes erstellen? Ihre alten Codes werden ungültig.",
			"security.codes.regenerate":   "Neue Backup-Codes erstellen",
			"security.codes.regenerated":  "Neue Backup-Codes wurden erstellt; die alten gelten nicht mehr.",
			"security.pw.title":           "Passwort",
			"security.pw.intro":           "Nach der Änderung werden alle anderen Geräte und Browser, die bei Ihrem Konto angemeldet sind, abgemeldet, und Sie erhalten eine Bestätigung per E-Mail.",
			"security.pw.current":         "Aktuelles Passwort",
			"security.pw.help":            "Mindestens %d Zeichen.",
			"security.pw.submit":          "Passwort ändern",
			"security.pw.forgot":          "Aktuelles Passwort vergessen? Per E-Mail zurücksetzen",
			"security.pw.nopassword":      "Sie melden sich nur über einen anderen Dienst an, deshalb hat Ihr Konto kein Passwort. Um sich auch mit E-Mail-Adresse und Passwort anzumelden, verknüpfen Sie beides in Ihrem Profil.",
			"security.pw.link":            "E-Mail-Adresse und Passwort verknüpfen",
			"security.pw.changed":         "Ihr Passwort wurde geändert. Alle anderen Sitzungen wurden abgemeldet.",
			"security.pw.wrong":           "Das ist nicht Ihr aktuelles Passwort.",
			"security.pw.currentrequired": "Geben Sie Ihr aktuelles Passwort ein.",
			"security.pw.rules":           "Wählen Sie ein Passwort mit mindestens %d Zeichen.",
			"security.pw.same":            "Wählen Sie ein anderes Passwort als Ihr aktuelles.",
			"security.pw.none":            "Ihr Konto hat kein Passwort, das geändert werden könnte. Verknüpfen Sie zuerst in Ihrem Profil eine E-Mail-Adresse und ein Passwort.",
			"security.pk.title":           "Passkeys",
			"security.2fa.bypasskey":      "Ihr Passkey ist Ihr zweiter Faktor: Bei der Anmeldung mit Passwort wird er verlangt. Eine Authenticator-App ist ein zweiter Weg.",
			"security.pk.off":             "Passkeys sind auf diesem Server abgeschaltet.",
			"security.pk.intro":           "Ein Passkey meldet Sie mit Ihrem Smartphone, einem Sicherheitsschlüssel oder der Bildschirmsperre dieses Geräts an, ohne Passwort. Er kann nicht abgefischt werden und dient auch als Ihr zweiter Faktor.",
			"security.pk.synced":          "Synchronisiert",
			"security.pk.device":          "Nur dieses Gerät",
			"security.pk.added":           "Hinzugefügt",
			"security.pk.lastused":        "Zuletzt verwendet",
			"security.pk.never":           "Nie",
			"security.pk.newname":         "Neuer Name",
			"security.pk.rename":          "Umbenennen",
			"security.pk.remove":          "Entfernen",
			"security.pk.removeconfirm":   "Diesen Passkey entfernen? Er kann Sie dann nicht mehr anmelden.",
			"security.pk.none":            "Sie haben noch keinen Passkey.",
			"security.pk.addtitle":        "Passkey hinzufügen",
			"security.pk.confirm":         "Bestätigen Sie zu Ihrer Sicherheit zuerst, dass Sie es sind.",
			"security.pk.orcode":          "Oder ein Code aus Ihrer Authenticator-App",
			"security.pk.name":            "Name (optional)",
			"security.pk.namehelp":        "Zum Beispiel „Arbeitslaptop“. Ohne Namen wird die Art des Geräts verwendet.",
			"security.pk.add":             "Passkey hinzufügen",
			"security.pk.nojs":            "Zum Hinzufügen eines Passkeys braucht dieser Browser JavaScript.",
			"security.pk.wait":            "Folgen Sie der Aufforderung Ihres Browsers, um den Passkey zu erstellen …",
			"security.pk.cancelled":       "Es wurde kein Passkey hinzugefügt. Sie können es erneut versuchen.",
			"security.pk.signinagain":     "Melden Sie sich ab und wieder an und fügen Sie den Passkey dann innerhalb von zehn Minuten hinzu.",
			"security.pk.done":            "Der Passkey wurde hinzugefügt. Sie können sich jetzt damit anmelden.",
			"security.pk.renamed":         "Der Passkey wurde umbenannt.",
			"security.pk.removed":         "Der Passkey wurde entfernt.",
		},
	})
}
