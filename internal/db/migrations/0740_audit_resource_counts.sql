-- The daily counts (0400) gain the resource type, so the admin log counts a
-- broad resource_type filter (a third of the log is about sessions) from the
-- daily rows instead of from the log's index. Events without a resource type
-- count under ''. The table is rebuilt, as SQLite cannot change a primary key.
CREATE TABLE audit_event_counts_by_resource (
    day BIGINT NOT NULL,
    event_type TEXT NOT NULL,
    status TEXT NOT NULL,
    source_service TEXT NOT NULL,
    is_reported BOOLEAN NOT NULL,
    resource_type TEXT NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (day, event_type, status, source_service, is_reported, resource_type)
);
INSERT INTO audit_event_counts_by_resource (day, event_type, status, source_service, is_reported, resource_type, n)
SELECT created_at - (created_at % 86400000000), event_type, status, source_service, is_reported, COALESCE(resource_type, ''), COUNT(*)
FROM audit_events
GROUP BY created_at - (created_at % 86400000000), event_type, status, source_service, is_reported, COALESCE(resource_type, '');
DROP TABLE audit_event_counts;
ALTER TABLE audit_event_counts_by_resource RENAME TO audit_event_counts;
