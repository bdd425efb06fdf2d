package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	netmail "net/mail"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"
	gomail "github.com/wneessen/go-mail"

	"hmid/internal/telemetry"
)

// Default ports when the URL names none: the submission port with STARTTLS
// (RFC 6409) and the submission port with implicit TLS (RFC 8314 §3.3).
const (
	defaultSMTPPort  = 587
	defaultSMTPSPort = 465
)

// SMTPSender delivers messages through an SMTP server, opening one
// connection per message: notification mails are rare, and a fresh
// connection cannot be left broken by an earlier failure.
type SMTPSender struct {
	host       string
	addr       string // host:port, for error messages
	from       string
	fromDomain string // right side of Message-IDs
	options    []gomail.Option
}

var _ Sender = (*SMTPSender)(nil)

// SMTPOption changes how NewSMTPSender connects; the tests use one to trust
// the certificate authority of their local server.
type SMTPOption func(*smtpConfig)

type smtpConfig struct {
	tlsConfig *tls.Config
}

// NewSMTPSender returns a sender for rawURL, which has one of the forms
//
//	smtp://[user[:password]@]host[:port][?tls=required]
//	smtps://[user[:password]@]host[:port]
//
// smtp uses STARTTLS when the server offers it (port 587 by default);
// tls=required refuses to send when it does not. smtps speaks TLS from the
// first byte (port 465 by default). With a user, the client authenticates
// with the strongest mechanism the server offers, and never sends a password
// over an unencrypted connection. from is the sender address, optionally
// with a display name ("Accounts <no-reply@example.com>").
//
// The returned error never contains the password.
func NewSMTPSender(rawURL, from string, opts ...SMTPOption) (*SMTPSender, error) {
	var cfg smtpConfig
	for _, o := range opts {
		o(&cfg)
	}

	u, ep, err := parseSMTPURL(rawURL)
	if err != nil {
		return nil, err
	}

	fromAddr, err := netmail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("mail: invalid from address %q: %w", from, err)
	}
	_, fromDomain, _ := strings.Cut(fromAddr.Address, "@")

	host := u.Hostname()
	options := []gomail.Option{
		gomail.WithPort(ep.port),
		gomail.WithTLSConfig(cfg.forHost(host)),
		gomail.WithTLSPolicy(ep.policy),
	}
	if ep.implicitTLS {
		options = append(options, gomail.WithSSL())
	}
	if u.User != nil {
		password, _ := u.User.Password()
		options = append(options,
			// Auto-discovery picks the strongest mechanism the server
			// offers and leaves out PLAIN and LOGIN on an unencrypted
			// connection.
			gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(u.User.Username()),
			gomail.WithPassword(password),
		)
	}

	return &SMTPSender{
		host:       host,
		addr:       net.JoinHostPort(host, strconv.Itoa(ep.port)),
		from:       from,
		fromDomain: fromDomain,
		options:    options,
	}, nil
}

// smtpEndpoint is what an SMTP URL says about the connection.
type smtpEndpoint struct {
	port        int
	implicitTLS bool // smtps: TLS from the first byte
	policy      gomail.TLSPolicy
}

// parseSMTPURL checks rawURL against the forms NewSMTPSender documents.
// Its errors never repeat the URL, which may hold a password.
func parseSMTPURL(rawURL string) (*url.URL, smtpEndpoint, error) {
	var ep smtpEndpoint
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error repeats the whole URL, password included; report only
		// what is wrong with it.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, ep, fmt.Errorf("mail: invalid SMTP URL: %w", err)
	}

	switch u.Scheme {
	case "smtp":
		ep.port = defaultSMTPPort
	case "smtps":
		ep.implicitTLS = true
		ep.port = defaultSMTPSPort
	default:
		return nil, ep, fmt.Errorf("mail: invalid SMTP URL: scheme must be smtp or smtps, not %q", u.Scheme)
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return nil, ep, errors.New("mail: invalid SMTP URL: missing host (want smtp://host:port)")
	}
	if u.Path != "" && u.Path != "/" {
		return nil, ep, fmt.Errorf("mail: invalid SMTP URL: unexpected path %q", u.Path)
	}
	if p := u.Port(); p != "" {
		ep.port, err = strconv.Atoi(p)
		if err != nil || ep.port < 1 || ep.port > 65535 {
			return nil, ep, fmt.Errorf("mail: invalid SMTP URL: port %q is not between 1 and 65535", p)
		}
	}
	if ep.policy, err = smtpTLSPolicy(u.Query(), ep.implicitTLS); err != nil {
		return nil, ep, err
	}
	if u.User != nil && u.User.Username() == "" {
		return nil, ep, errors.New("mail: invalid SMTP URL: password without user name")
	}
	return u, ep, nil
}

// smtpTLSPolicy reads the only query parameter an SMTP URL may carry,
// tls=required, which makes STARTTLS mandatory on smtp.
func smtpTLSPolicy(query url.Values, implicitTLS bool) (gomail.TLSPolicy, error) {
	policy := gomail.TLSOpportunistic
	for key, values := range query {
		if key != "tls" {
			return policy, fmt.Errorf("mail: invalid SMTP URL: unknown parameter %q (only tls is known)", key)
		}
		if implicitTLS {
			return policy, errors.New("mail: invalid SMTP URL: smtps always uses TLS, the tls parameter is for smtp")
		}
		if len(values) != 1 || values[0] != "required" {
			return policy, fmt.Errorf("mail: invalid SMTP URL: tls=%q is not supported (want tls=required)", query.Get("tls"))
		}
		policy = gomail.TLSMandatory
	}
	return policy, nil
}

// forHost returns the TLS configuration for host: the option's, with the
// server name and the TLS 1.2 floor filled in where it left them empty.
func (cfg smtpConfig) forHost(host string) *tls.Config {
	if cfg.tlsConfig == nil {
		return &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	tlsConfig := cfg.tlsConfig.Clone()
	if tlsConfig.ServerName == "" {
		tlsConfig.ServerName = host
	}
	if tlsConfig.MinVersion == 0 {
		tlsConfig.MinVersion = tls.VersionTLS12
	}
	return tlsConfig
}

// Send delivers m as a multipart/alternative mail (plain text first, HTML as
// the preferred alternative), or as plain text when m.HTML is empty. It
// returns an error if m has no recipient or text, or if the server refuses
// the connection, the authentication or the message; ctx bounds the whole
// exchange.
func (s *SMTPSender) Send(ctx context.Context, m Message) error {
	if m.To == "" {
		return errors.New("mail: message has no recipient")
	}
	if m.Text == "" {
		return errors.New("mail: message has no text body")
	}

	// No User-Agent: naming the mail library and its version helps only
	// an attacker.
	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	if err := msg.From(s.from); err != nil {
		return fmt.Errorf("mail: from address: %w", err)
	}
	if err := msg.To(m.To); err != nil {
		return fmt.Errorf("mail: recipient address: %w", err)
	}
	msg.Subject(m.Subject)
	msg.SetDate()
	// The sender's domain rather than the machine's host name (the
	// library's default), which inside a container is meaningless.
	msg.SetMessageIDWithValue(uuid.NewString() + "@" + s.fromDomain)
	if m.Locale != "" {
		msg.SetGenHeader(gomail.HeaderContentLang, m.Locale)
	}
	// Marks the mail as machine-generated so that vacation responders do not
	// answer it: RFC 3834 §5, and the header Microsoft Exchange reads instead.
	msg.SetGenHeader("Auto-Submitted", "auto-generated")
	msg.SetGenHeader("X-Auto-Response-Suppress", "All")
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	if m.HTML != "" {
		msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	}

	client, err := gomail.NewClient(s.host, s.options...)
	if err != nil {
		return fmt.Errorf("mail: SMTP client: %w", err)
	}
	end := telemetry.StartCall(ctx, "SMTP send", s.host)
	err = client.DialAndSendWithContext(ctx, msg)
	if end != nil {
		end(err)
	}
	if err != nil {
		return fmt.Errorf("mail: send %s mail via %s: %w", m.Kind, s.addr, err)
	}
	return nil
}
