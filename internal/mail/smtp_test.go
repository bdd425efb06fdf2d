package mail

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// testCert returns a self-signed certificate for 127.0.0.1 and localhost,
// and a pool that trusts it.
func testCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test mail server"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}, pool
}

// received is one message as the test server got it.
type received struct {
	from     string
	rcpts    []string
	raw      []byte
	user     string // authenticated user, empty without AUTH
	password string
	tls      bool // whether the transaction ran over TLS
}

// backend is an SMTP server backend that keeps every message; with a user
// set it requires PLAIN authentication with that user and password.
type backend struct {
	user, password string

	mu   sync.Mutex
	msgs []received
}

func (b *backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{b: b, conn: c}, nil
}

func (b *backend) messages() []received {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]received(nil), b.msgs...)
}

type session struct {
	b    *backend
	conn *smtp.Conn
	cur  received
}

func (s *session) AuthMechanisms() []string {
	return []string{sasl.Plain}
}

func (s *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != s.b.user || password != s.b.password {
			return errors.New("invalid username or password")
		}
		s.cur.user, s.cur.password = username, password
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.b.user != "" && s.cur.user == "" {
		return smtp.ErrAuthRequired
	}
	s.cur.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.rcpts = append(s.cur.rcpts, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, s.cur.tls = s.conn.TLSConnectionState()
	s.cur.raw = raw
	s.b.mu.Lock()
	s.b.msgs = append(s.b.msgs, s.cur)
	s.b.mu.Unlock()
	return nil
}

func (s *session) Reset() {
	s.cur = received{user: s.cur.user, password: s.cur.password}
}

func (s *session) Logout() error { return nil }

type serverMode int

const (
	plainOnly    serverMode = iota // no TLS at all
	withSTARTTLS                   // plain connection that offers STARTTLS
	implicitTLS                    // TLS from the first byte
)

// startServer runs an SMTP server on a free local port until the test ends
// and returns its address and backend.
func startServer(t *testing.T, mode serverMode, cert tls.Certificate, user, password string) (string, *backend) {
	t.Helper()
	be := &backend{user: user, password: password}
	srv := smtp.NewServer(be)
	srv.Domain = "localhost"
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.ErrorLog = log.New(io.Discard, "", 0)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	switch mode {
	case withSTARTTLS:
		srv.TLSConfig = tlsConfig
	case implicitTLS:
		ln = tls.NewListener(ln, tlsConfig)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return ln.Addr().String(), be
}

// part is one decoded MIME part of a delivered message.
type part struct {
	contentType string
	body        string
}

// parseDelivered reads a delivered message and decodes its
// multipart/alternative body.
func parseDelivered(t *testing.T, raw []byte) (*netmail.Message, []part) {
	t.Helper()
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("read delivered message: %v\n%s", err, raw)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	if mediaType != "multipart/alternative" {
		t.Fatalf("Content-Type = %q, want multipart/alternative", mediaType)
	}
	var parts []part
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = p
		if strings.EqualFold(p.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
			r = quotedprintable.NewReader(p)
		}
		body, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		// SMTP carries lines ending in CRLF; the rendered bodies use LF.
		parts = append(parts, part{contentType: ct, body: strings.ReplaceAll(string(body), "\r\n", "\n")})
	}
	return msg, parts
}

func decodeHeader(t *testing.T, v string) string {
	t.Helper()
	s, err := new(mime.WordDecoder).DecodeHeader(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSMTPSenderDelivers(t *testing.T) {
	cert, pool := testCert(t)
	tests := []struct {
		name   string
		mode   serverMode
		scheme string
		query  string
		locale string
		kind   string
		word   string // a word that proves the language
	}{
		{"STARTTLS German", withSTARTTLS, "smtp", "?tls=required", "de", KindEmailChangeVerify, "Bestätigung"},
		{"implicit TLS English", implicitTLS, "smtps", "", "en", KindPasswordReset, "password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, be := startServer(t, tt.mode, cert, "mailer", "s3cr3t pass")
			s, err := NewSMTPSender(tt.scheme+"://mailer:s3cr3t%20pass@"+addr+tt.query,
				"Accounts <no-reply@example.org>", withTLSConfig(&tls.Config{RootCAs: pool}))
			if err != nil {
				t.Fatal(err)
			}
			m, err := Render(tt.kind, tt.locale, fullData())
			if err != nil {
				t.Fatal(err)
			}
			m.To = "anna@example.org"
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.Send(ctx, m); err != nil {
				t.Fatalf("Send: %v", err)
			}

			msgs := be.messages()
			if len(msgs) != 1 {
				t.Fatalf("server got %d messages, want 1", len(msgs))
			}
			got := msgs[0]
			if got.user != "mailer" || got.password != "s3cr3t pass" {
				t.Errorf("AUTH PLAIN as %q/%q, want mailer/s3cr3t pass", got.user, got.password)
			}
			if !got.tls {
				t.Error("message was sent without TLS")
			}
			if got.from != "no-reply@example.org" || len(got.rcpts) != 1 || got.rcpts[0] != "anna@example.org" {
				t.Errorf("envelope from %q to %v", got.from, got.rcpts)
			}

			msg, parts := parseDelivered(t, got.raw)
			if to := msg.Header.Get("To"); !strings.Contains(to, "anna@example.org") {
				t.Errorf("To = %q", to)
			}
			if from := decodeHeader(t, msg.Header.Get("From")); !strings.Contains(from, "no-reply@example.org") {
				t.Errorf("From = %q", from)
			}
			if subj := decodeHeader(t, msg.Header.Get("Subject")); subj != m.Subject {
				t.Errorf("Subject = %q, want %q", subj, m.Subject)
			}
			if cl := msg.Header.Get("Content-Language"); cl != tt.locale {
				t.Errorf("Content-Language = %q, want %q", cl, tt.locale)
			}
			if as := msg.Header.Get("Auto-Submitted"); as != "auto-generated" {
				t.Errorf("Auto-Submitted = %q", as)
			}
			if xs := msg.Header.Get("X-Auto-Response-Suppress"); xs != "All" {
				t.Errorf("X-Auto-Response-Suppress = %q", xs)
			}
			if id := msg.Header.Get("Message-Id"); !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@example.org>") {
				t.Errorf("Message-ID = %q, want one in the sender's domain", id)
			}
			if _, err := msg.Header.Date(); err != nil {
				t.Errorf("Date header: %v", err)
			}
			if ua := msg.Header.Get("User-Agent") + msg.Header.Get("X-Mailer"); ua != "" {
				t.Errorf("message names its mail library: %q", ua)
			}

			if len(parts) != 2 || parts[0].contentType != "text/plain" || parts[1].contentType != "text/html" {
				t.Fatalf("parts = %+v, want text/plain then text/html", parts)
			}
			for _, p := range parts {
				for _, s := range []string{"https://id.example.org/verify?token=tok123", "tok123", tt.word} {
					if !strings.Contains(p.body, s) {
						t.Errorf("%s part lacks %q:\n%s", p.contentType, s, p.body)
					}
				}
			}
			if parts[0].body != m.Text {
				t.Errorf("text part differs from the rendered text:\n%q\n%q", parts[0].body, m.Text)
			}
			if !strings.Contains(parts[1].body, `<html lang="`+tt.locale+`">`) {
				t.Errorf("html part is not the rendered HTML:\n%s", parts[1].body)
			}
		})
	}
}

func TestSMTPSenderTLSPolicy(t *testing.T) {
	cert, pool := testCert(t)
	m, err := Render(KindTwoFactorDisabled, "en", fullData())
	if err != nil {
		t.Fatal(err)
	}
	m.To = "anna@example.org"
	ctx := context.Background()
	trust := withTLSConfig(&tls.Config{RootCAs: pool})

	// send starts a server in mode (with user and password, when set),
	// sends m through a sender for urlFormat with the server's address, and
	// returns what the server got and the send's error.
	send := func(t *testing.T, mode serverMode, user, password, urlFormat string, opts ...SMTPOption) ([]received, error) {
		t.Helper()
		addr, be := startServer(t, mode, cert, user, password)
		s, err := NewSMTPSender(fmt.Sprintf(urlFormat, addr), "no-reply@example.org", opts...)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Send(ctx, m)
		return be.messages(), err
	}

	t.Run("opportunistic sends without STARTTLS", func(t *testing.T) {
		msgs, err := send(t, plainOnly, "", "", "smtp://%s", trust)
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
		if len(msgs) != 1 || msgs[0].tls {
			t.Fatalf("messages = %+v, want one without TLS", msgs)
		}
	})

	t.Run("opportunistic upgrades when offered", func(t *testing.T) {
		msgs, err := send(t, withSTARTTLS, "", "", "smtp://%s", trust)
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
		if len(msgs) != 1 || !msgs[0].tls {
			t.Fatalf("messages = %+v, want one over TLS", msgs)
		}
	})

	t.Run("required refuses a server without STARTTLS", func(t *testing.T) {
		msgs, err := send(t, plainOnly, "", "", "smtp://%s?tls=required", trust)
		if err == nil {
			t.Fatal("Send succeeded without TLS")
		} else if !strings.Contains(err.Error(), "STARTTLS") {
			t.Errorf("err = %v, want a STARTTLS failure", err)
		}
		if n := len(msgs); n != 0 {
			t.Fatalf("server got %d messages", n)
		}
	})

	t.Run("untrusted certificate is refused", func(t *testing.T) {
		msgs, err := send(t, implicitTLS, "", "", "smtps://%s")
		if err == nil {
			t.Fatal("Send succeeded with an untrusted certificate")
		} else if !strings.Contains(err.Error(), "certificate") {
			t.Errorf("err = %v, want a certificate failure", err)
		}
		if n := len(msgs); n != 0 {
			t.Fatalf("server got %d messages", n)
		}
	})

	t.Run("wrong password is refused", func(t *testing.T) {
		msgs, err := send(t, withSTARTTLS, "mailer", "right", "smtp://mailer:wrong@%s", trust)
		if err == nil {
			t.Fatal("Send succeeded with a wrong password")
		}
		if !strings.Contains(err.Error(), "AUTH") {
			t.Errorf("err = %v, want an authentication failure", err)
		}
		if strings.Contains(err.Error(), "wrong") {
			t.Errorf("error reveals the password: %v", err)
		}
		if n := len(msgs); n != 0 {
			t.Fatalf("server got %d messages", n)
		}
	})
}

func TestSMTPSenderRejectsIncompleteMessage(t *testing.T) {
	s, err := NewSMTPSender("smtp://127.0.0.1:1", "no-reply@example.org")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(context.Background(), Message{Text: "hi"}); err == nil {
		t.Error("Send without recipient succeeded")
	}
	if err := s.Send(context.Background(), Message{To: "a@example.org"}); err == nil {
		t.Error("Send without text succeeded")
	}
}

func TestNewSMTPSender(t *testing.T) {
	valid := []struct {
		url, addr string
	}{
		{"smtp://mail.example.org", "mail.example.org:587"},
		{"smtps://mail.example.org", "mail.example.org:465"},
		{"smtp://user:pw@mail.example.org:2525/", "mail.example.org:2525"},
		{"smtp://mail.example.org:25?tls=required", "mail.example.org:25"},
		{"smtps://user@[::1]:465", "[::1]:465"},
	}
	for _, tt := range valid {
		s, err := NewSMTPSender(tt.url, "no-reply@example.org")
		if err != nil {
			t.Errorf("NewSMTPSender(%q): %v", tt.url, err)
			continue
		}
		if s.addr != tt.addr {
			t.Errorf("NewSMTPSender(%q) connects to %q, want %q", tt.url, s.addr, tt.addr)
		}
	}

	invalid := []struct {
		url, from, want string
	}{
		{"http://mail.example.org", "a@example.org", "scheme must be smtp or smtps"},
		{"mail.example.org:587", "a@example.org", "scheme must be smtp or smtps"},
		{"smtp://", "a@example.org", "missing host"},
		{"smtp://:587", "a@example.org", "missing host"},
		{"smtp://mail.example.org:99999", "a@example.org", "not between 1 and 65535"},
		{"smtp://user:hunter2@mail.example.org:abc", "a@example.org", "invalid port"},
		{"smtp://mail.example.org/inbox", "a@example.org", "unexpected path"},
		{"smtp://mail.example.org?tls=maybe", "a@example.org", "tls=\"maybe\" is not supported"},
		{"smtp://mail.example.org?tls=required&tls=required", "a@example.org", "not supported"},
		{"smtps://mail.example.org?tls=required", "a@example.org", "smtps always uses TLS"},
		{"smtp://mail.example.org?timeout=5", "a@example.org", "unknown parameter \"timeout\""},
		{"smtp://:hunter2@mail.example.org", "a@example.org", "password without user name"},
		{"smtp://mail.example.org", "not an address", "invalid from address"},
		{"smtp://mail.example.org", "", "invalid from address"},
	}
	for _, tt := range invalid {
		_, err := NewSMTPSender(tt.url, tt.from)
		if err == nil {
			t.Errorf("NewSMTPSender(%q, %q) succeeded", tt.url, tt.from)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewSMTPSender(%q, %q) = %v, want it to mention %q", tt.url, tt.from, err, tt.want)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error reveals the password: %v", err)
		}
	}
}

// withTLSConfig sets the TLS configuration for STARTTLS and implicit TLS, for
// example to trust a private certificate authority. When its ServerName is
// empty, the host from the URL is used so that the certificate is still
// verified against it.
func withTLSConfig(c *tls.Config) SMTPOption {
	return func(s *smtpConfig) { s.tlsConfig = c }
}
