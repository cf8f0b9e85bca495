-- Console accounts. A member signs in to the web console with their email
-- and a password, which they set through a link that an admin made. Only
-- the argon2id hash of a password is stored (NULL: none set yet), and only
-- the SHA-256 (hex) of a session's or a link's token, which is the row's id.
ALTER TABLE members ADD COLUMN password_hash TEXT;
-- Sign-in finds the members of an email, in every organization.
CREATE INDEX members_sign_in ON members (lower(email)) WHERE password_hash IS NOT NULL;

-- Signed-in browsers: a member's session (user_id), or one exchanged for a
-- management key (key_hash). Removing the member or deleting the key ends
-- the session with it; a disabled or expired key, an idle or an old
-- session, is refused when it is read.
CREATE TABLE console_sessions (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id         TEXT,
    key_hash        TEXT REFERENCES api_keys (hash) ON DELETE CASCADE,
    csrf_token      TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    last_seen_at    INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL, -- the absolute end, whatever the activity
    CHECK ((user_id IS NULL) <> (key_hash IS NULL)),
    FOREIGN KEY (organization_id, user_id) REFERENCES members (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX console_sessions_user ON console_sessions (organization_id, user_id);
CREATE INDEX console_sessions_key ON console_sessions (key_hash);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

-- Links that set a member's password: an invitation (user_id NULL until
-- accepted, unless the email was already a member's) or a reset (user_id
-- set). A link is used once (used_at), and not after expires_at.
CREATE TABLE invitations (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    email           TEXT NOT NULL,
    role            TEXT NOT NULL CHECK (role IN ('org:admin', 'org:member')),
    user_id         TEXT,
    created_by      TEXT, -- the user id of the admin who made it, if any
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    used_at         INTEGER,
    FOREIGN KEY (organization_id, user_id) REFERENCES members (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX invitations_list ON invitations (organization_id, created_at, id);
CREATE INDEX invitations_email ON invitations (organization_id, lower(email));
CREATE INDEX invitations_user ON invitations (organization_id, user_id);
