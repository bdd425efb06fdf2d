// Package mail renders and delivers the notification mails of the service:
// two-factor changes (an administrator's reset among them), audit report
// updates, email change and link verification, verification of a newly
// registered address, password reset and password change.
//
// Mails are rendered from embedded English and German templates (Render) into
// a Message with a plain-text and an HTML body, and handed to a Sender. Two
// senders exist: SMTPSender delivers through a real mail server, and
// OutboxSender, used when no mail server is configured, logs each message and
// keeps it in the mail_outbox table so that a developer or a test can still
// read the link or token a user would have received.
package mail

import "context"

// Kinds of mail, one per template. The value is stored in Message.Kind and in
// the outbox, so it must stay stable.
const (
	// KindTwoFactorEnabled confirms that two-factor authentication was turned on.
	KindTwoFactorEnabled = "two_factor_enabled"
	// KindTwoFactorDisabled alerts the user that two-factor authentication was turned off.
	KindTwoFactorDisabled = "two_factor_disabled"
	// KindTwoFactorReset tells the user that an administrator turned two-factor
	// authentication off for them (a lost authenticator).
	KindTwoFactorReset = "two_factor_reset"
	// KindBackupCodesRegenerated tells the user that new backup codes replaced the old ones.
	KindBackupCodesRegenerated = "backup_codes_regenerated"
	// KindAuditReportStatusChanged tells the reporting user that their audit report changed status.
	KindAuditReportStatusChanged = "audit_report_status_changed"
	// KindEmailChangeVerify asks the user to confirm a new email address.
	KindEmailChangeVerify = "email_change_verify"
	// KindEmailLinkVerify asks the user to confirm an email address being linked for password login.
	KindEmailLinkVerify = "email_link_verify"
	// KindEmailVerify asks a newly registered user to confirm their email address.
	KindEmailVerify = "email_verify"
	// KindPasswordReset carries the link and token to choose a new password.
	KindPasswordReset = "password_reset"
	// KindPasswordChanged tells the user that their password was changed.
	KindPasswordChanged = "password_changed"
	// KindPasskeyAdded tells the user that a passkey was added to their account.
	KindPasskeyAdded = "passkey_added"
	// KindPasskeyRemoved tells the user that a passkey was removed from their account.
	KindPasskeyRemoved = "passkey_removed"
	// KindInvitation invites a user an operator created to choose their
	// password.
	KindInvitation = "invitation"
	// KindAddressVerifiedElsewhere tells the holder of an unverified
	// registration that a provider sign-in verified its address for another
	// account, and that their own login was kept.
	KindAddressVerifiedElsewhere = "address_verified_elsewhere"
)

// Message is one mail ready to be sent: Render fills everything but To.
type Message struct {
	// To is the recipient's address.
	To string
	// Subject is a single line, already localized.
	Subject string
	// Text is the plain-text body.
	Text string
	// HTML is the HTML body; when empty, the mail is sent as plain text only.
	HTML string
	// Kind is the template the message was rendered from, one of the Kind constants.
	Kind string
	// Locale is the language the message was rendered in ("en" or "de").
	Locale string
}

// Sender delivers messages. Implementations are safe for concurrent use.
type Sender interface {
	// Send delivers m or returns why it could not. A nil error means the
	// message was accepted (by the mail server or the outbox), not that it
	// reached the recipient's inbox.
	Send(ctx context.Context, m Message) error
}
