-- Tracking (spec 3): devices, GPS points, trips and their status history,
-- locations and contacts, geofences, trip categories and trip templates.

CREATE TABLE devices (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    device_type TEXT NOT NULL DEFAULT '',
    api_key_id TEXT UNIQUE REFERENCES api_keys (id) ON DELETE SET NULL,
    is_active BOOLEAN NOT NULL DEFAULT TRUE,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX devices_created ON devices (created_at, id);

CREATE TABLE trip_categories (
    id TEXT PRIMARY KEY,
    parent_id TEXT REFERENCES trip_categories (id) ON DELETE SET NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    color TEXT,
    is_active BOOLEAN NOT NULL DEFAULT TRUE,
    sort_order INTEGER NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX trip_categories_order ON trip_categories (sort_order, name);
CREATE INDEX trip_categories_parent ON trip_categories (parent_id);

CREATE TABLE locations (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    street TEXT NOT NULL DEFAULT '',
    zip TEXT NOT NULL DEFAULT '',
    city TEXT NOT NULL DEFAULT '',
    country TEXT NOT NULL DEFAULT '',
    latitude DOUBLE PRECISION,
    longitude DOUBLE PRECISION,
    notes TEXT NOT NULL DEFAULT '',
    is_active BOOLEAN NOT NULL DEFAULT TRUE,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX locations_name ON locations (name, id);

CREATE TABLE location_contacts (
    id TEXT PRIMARY KEY,
    location_id TEXT NOT NULL REFERENCES locations (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    phone TEXT NOT NULL DEFAULT '',
    email TEXT NOT NULL DEFAULT '',
    role TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL
);
CREATE INDEX location_contacts_location ON location_contacts (location_id, created_at);

CREATE TABLE trips (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'draft',
    gps_logging_enabled BOOLEAN NOT NULL DEFAULT FALSE,
    device_id TEXT REFERENCES devices (id) ON DELETE SET NULL,
    category_id TEXT REFERENCES trip_categories (id) ON DELETE SET NULL,
    origin_id TEXT REFERENCES locations (id) ON DELETE SET NULL,
    destination_id TEXT REFERENCES locations (id) ON DELETE SET NULL,
    weight_kg DOUBLE PRECISION,
    notes TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '[]',
    start_latitude DOUBLE PRECISION,
    start_longitude DOUBLE PRECISION,
    end_latitude DOUBLE PRECISION,
    end_longitude DOUBLE PRECISION,
    started_at BIGINT,
    ended_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX trips_created ON trips (created_at, id);
CREATE INDEX trips_status ON trips (status, created_at);
CREATE INDEX trips_device ON trips (device_id, status);
CREATE INDEX trips_category ON trips (category_id);
CREATE INDEX trips_origin ON trips (origin_id);
CREATE INDEX trips_destination ON trips (destination_id);
-- At most one active GPS-logging trip per device: the backstop that makes
-- concurrent activations on one device let exactly one win, on both engines.
CREATE UNIQUE INDEX trips_one_logging_per_device ON trips (device_id) WHERE status = 'active' AND gps_logging_enabled = TRUE;

CREATE TABLE trip_status_history (
    id TEXT PRIMARY KEY,
    trip_id TEXT NOT NULL REFERENCES trips (id) ON DELETE CASCADE,
    old_status TEXT NOT NULL,
    new_status TEXT NOT NULL,
    changed_by TEXT,
    latitude DOUBLE PRECISION,
    longitude DOUBLE PRECISION,
    changed_at BIGINT NOT NULL
);
CREATE INDEX trip_status_history_trip ON trip_status_history (trip_id, changed_at);

CREATE TABLE gps_points (
    id TEXT PRIMARY KEY,
    device_id TEXT REFERENCES devices (id) ON DELETE SET NULL,
    trip_id TEXT REFERENCES trips (id) ON DELETE SET NULL,
    latitude DOUBLE PRECISION NOT NULL,
    longitude DOUBLE PRECISION NOT NULL,
    altitude DOUBLE PRECISION NOT NULL,
    heading DOUBLE PRECISION NOT NULL,
    ts BIGINT NOT NULL,
    speed_kmh DOUBLE PRECISION NOT NULL,
    speed_mps DOUBLE PRECISION NOT NULL,
    speed_mph DOUBLE PRECISION NOT NULL,
    speed_knots DOUBLE PRECISION NOT NULL,
    pdop DOUBLE PRECISION,
    hdop DOUBLE PRECISION,
    vdop DOUBLE PRECISION,
    created_at BIGINT NOT NULL
);
-- Newest-first listing walks this index alone (ids of a page), so deep pages
-- never touch the table rows they skip.
CREATE INDEX gps_points_ts ON gps_points (ts, id);
CREATE INDEX gps_points_device ON gps_points (device_id, ts, id);
CREATE INDEX gps_points_trip ON gps_points (trip_id, ts, id);

-- The number of GPS points, kept in the same transaction as each insert and
-- delete and spread over 16 slots so concurrent writers rarely touch the same
-- row; the list total is their sum instead of a COUNT over every point.
CREATE TABLE gps_point_count (
    slot INTEGER PRIMARY KEY,
    n BIGINT NOT NULL
);
INSERT INTO gps_point_count (slot, n) VALUES (0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0), (8, 0), (9, 0), (10, 0), (11, 0), (12, 0), (13, 0), (14, 0), (15, 0);

-- Points per hour of their timestamp (bucket = ts / 3600 s), also spread over
-- 16 slots. A deep page walks these small rows from the newest hour to find
-- the hour holding its first point, then skips only inside that hour, so the
-- cost of page N no longer grows with N.
CREATE TABLE gps_point_buckets (
    bucket BIGINT NOT NULL,
    slot INTEGER NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (bucket, slot)
);

CREATE TABLE geofences (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    latitude DOUBLE PRECISION NOT NULL,
    longitude DOUBLE PRECISION NOT NULL,
    radius_km DOUBLE PRECISION NOT NULL,
    is_active BOOLEAN NOT NULL DEFAULT TRUE,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX geofences_created ON geofences (created_at, id);

CREATE TABLE trip_templates (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    category_id TEXT REFERENCES trip_categories (id) ON DELETE SET NULL,
    origin_id TEXT REFERENCES locations (id) ON DELETE SET NULL,
    destination_id TEXT REFERENCES locations (id) ON DELETE SET NULL,
    device_id TEXT REFERENCES devices (id) ON DELETE SET NULL,
    gps_logging_enabled BOOLEAN NOT NULL DEFAULT FALSE,
    default_weight_kg DOUBLE PRECISION,
    notes TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX trip_templates_name ON trip_templates (name);
