-- Audit reports, the personal-data export history, and the indexes the audit
-- listings need. Every listing filter is an equality on one column followed by
-- a range or sort on created_at, so each filterable column gets a composite
-- (column, created_at) index: the database walks only the matching slice of the
-- log, already in created_at order, for both the page and its COUNT.

-- A user's report that an audit event of theirs was not them or looks wrong.
-- An event is reported once: the unique audit_event_id makes a second report
-- a conflict even when two requests race.
CREATE TABLE audit_reports (
    id TEXT PRIMARY KEY,
    audit_event_id TEXT NOT NULL UNIQUE REFERENCES audit_events (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    reason TEXT NOT NULL,
    description TEXT,
    status TEXT NOT NULL DEFAULT 'pending',
    reviewed_by TEXT,
    reviewed_at BIGINT,
    resolution_notes TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX audit_reports_user ON audit_reports (user_id, created_at);
CREATE INDEX audit_reports_status ON audit_reports (status, created_at);

-- One row per delivered personal-data export (spec 2, export history).
CREATE TABLE export_logs (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    exported_at BIGINT NOT NULL,
    ip_address TEXT NOT NULL DEFAULT '',
    user_agent TEXT NOT NULL DEFAULT '',
    export_format TEXT NOT NULL,
    file_size_bytes BIGINT NOT NULL,
    locale TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX export_logs_user ON export_logs (user_id, created_at);

-- Listing indexes on audit_events; (user_id, created_at) and (created_at)
-- already exist in the core schema. event_type also carries status, because
-- "this type of event, failed" is the most common combined filter and the
-- count can then be answered from the index alone.
CREATE INDEX audit_events_type_created ON audit_events (event_type, created_at);
CREATE INDEX audit_events_type_status_created ON audit_events (event_type, status, created_at);
CREATE INDEX audit_events_status_created ON audit_events (status, created_at);
CREATE INDEX audit_events_source_created ON audit_events (source_service, created_at);
CREATE INDEX audit_events_resource_created ON audit_events (resource_type, created_at);
CREATE INDEX audit_events_reported_created ON audit_events (is_reported, created_at);

-- Daily event counts per low-cardinality dimension, kept by the audit writer
-- in the same transaction as each event. An exact COUNT over a large slice of
-- the log (no filter, status=success, a month) costs time proportional to the
-- slice; summed from here it costs one row per day and combination, and only
-- the partial days at the edges of a date range are counted in the log itself.
CREATE TABLE audit_event_counts (
    day BIGINT NOT NULL,
    event_type TEXT NOT NULL,
    status TEXT NOT NULL,
    source_service TEXT NOT NULL,
    is_reported BOOLEAN NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (day, event_type, status, source_service, is_reported)
);
INSERT INTO audit_event_counts (day, event_type, status, source_service, is_reported, n)
SELECT created_at - (created_at % 86400000000), event_type, status, source_service, is_reported, COUNT(*)
FROM audit_events
GROUP BY created_at - (created_at % 86400000000), event_type, status, source_service, is_reported;
