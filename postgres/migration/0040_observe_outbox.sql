-- The durable outbox of observability deliveries: one row per event and
-- destination, written before the delivery is attempted and deleted once
-- it has succeeded or failed for good. The instance delivering a row holds
-- it (owner) until lease_until, renewing the lease while the row waits in
-- its memory; a row whose lease has run out (its instance crashed or
-- stopped) is taken by the next instance that looks, so each event is
-- delivered once the delivery succeeds, by one instance at a time.
CREATE TABLE observe_outbox (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id    TEXT NOT NULL,
    destination_id  TEXT NOT NULL,
    event           TEXT NOT NULL, -- JSON: the event as the destination receives it (no text in privacy mode)
    attempts        BIGINT NOT NULL,
    owner           TEXT NOT NULL,
    lease_until     BIGINT NOT NULL,
    created_at      BIGINT NOT NULL
);
CREATE INDEX observe_outbox_lease ON observe_outbox (lease_until);
CREATE INDEX observe_outbox_destination ON observe_outbox (destination_id);

-- How deliveries to each destination have gone, over every instance.
CREATE TABLE observe_delivery_status (
    destination_id  TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    sent            BIGINT NOT NULL,
    failed          BIGINT NOT NULL,
    dropped         BIGINT NOT NULL,
    last_success_at BIGINT,
    last_error_at   BIGINT,
    last_error      TEXT -- redacted: no URL, no secret
);
