-- mail_outbox keeps every mail the service would have sent when no SMTP
-- server is configured, so a developer (or a test) can read the link or
-- token a user would have received.
CREATE TABLE mail_outbox (
    id TEXT PRIMARY KEY,
    to_addr TEXT NOT NULL,
    subject TEXT NOT NULL,
    kind TEXT NOT NULL,
    locale TEXT NOT NULL,
    text_body TEXT NOT NULL,
    html_body TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE INDEX mail_outbox_to_addr_created_at_idx ON mail_outbox (to_addr, created_at);
