-- What the ledger keeps of a generation besides its cost: who made it
-- (attribution, from the request), what it said (its content, where the
-- workspace logs I/O) and what people thought of it (feedback).

ALTER TABLE generations ADD COLUMN http_referer TEXT;
ALTER TABLE generations ADD COLUMN app_title TEXT;
ALTER TABLE generations ADD COLUMN user_agent TEXT;

-- The prompt and completion of a generation, sealed with the secret box
-- (AES-256-GCM, bound to the generation id), written with its ledger entry
-- and deleted once older than the content retention.
CREATE TABLE generation_content (
    generation_id TEXT PRIMARY KEY REFERENCES generations (id) ON DELETE CASCADE,
    sealed        TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE INDEX generation_content_created ON generation_content (created_at);

-- Feedback on generations, submitted with a management key.
CREATE TABLE generation_feedback (
    id            TEXT PRIMARY KEY,
    generation_id TEXT NOT NULL REFERENCES generations (id) ON DELETE CASCADE,
    category      TEXT NOT NULL,
    comment       TEXT,
    key_hash      TEXT, -- the management key that submitted it
    user_id       TEXT,
    created_at    BIGINT NOT NULL
);
CREATE INDEX generation_feedback_generation ON generation_feedback (generation_id, created_at, id);
