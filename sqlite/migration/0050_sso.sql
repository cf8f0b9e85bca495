-- Single sign-on: OpenID Connect providers of an organization, the
-- identities they vouch for, SCIM provisioning and the mappings of an
-- identity provider's groups to roles and workspaces.

-- An organization's OpenID Connect providers. The client secret lives only
-- in sealed_client_secret, sealed with AES-256-GCM and bound to the row's
-- id (NULL: a public client, PKCE alone); client_secret_label is its masked
-- form, all the API ever shows. last_sign_in_at is when the provider last
-- signed someone in: single sign-on works once it is set.
CREATE TABLE sso_providers (
    id                   TEXT PRIMARY KEY,
    organization_id      TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name                 TEXT NOT NULL,
    issuer_url           TEXT NOT NULL,
    client_id            TEXT NOT NULL,
    sealed_client_secret TEXT,
    client_secret_label  TEXT,
    scopes               TEXT NOT NULL, -- JSON array
    email_claim          TEXT NOT NULL,
    email_verified_claim TEXT NOT NULL,
    name_claim           TEXT NOT NULL,
    groups_claim         TEXT, -- NULL: the provider's groups are not read
    allowed_domains      TEXT, -- JSON array, NULL: no member is created at first sign-in
    enabled              INTEGER NOT NULL,
    last_sign_in_at      INTEGER,
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL
);
CREATE INDEX sso_providers_list ON sso_providers (organization_id, created_at, id);

-- Who a provider signed in: its subject (the sub claim, stable per
-- provider) is a member. A first sign-in links the member by a verified
-- email, or creates them; later ones go by the subject alone.
CREATE TABLE sso_identities (
    provider_id     TEXT NOT NULL REFERENCES sso_providers (id) ON DELETE CASCADE,
    subject         TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    last_sign_in_at INTEGER NOT NULL,
    PRIMARY KEY (provider_id, subject),
    FOREIGN KEY (organization_id, user_id) REFERENCES members (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX sso_identities_member ON sso_identities (organization_id, user_id);

-- Sign-ins under way: the browser went to the provider and has not come
-- back. id is the SHA-256 of the state parameter (also in the browser's
-- cookie); the nonce is kept hashed, the PKCE verifier sealed. A row is
-- taken (deleted) by the callback, so a state works once.
CREATE TABLE sso_logins (
    id              TEXT PRIMARY KEY,
    provider_id     TEXT NOT NULL REFERENCES sso_providers (id) ON DELETE CASCADE,
    nonce_hash      TEXT NOT NULL,
    sealed_verifier TEXT NOT NULL,
    next            TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL
);
CREATE INDEX sso_logins_expires ON sso_logins (expires_at);

-- How an organization's members may sign in; no row: the defaults
-- (passwords allowed).
CREATE TABLE sign_in_settings (
    organization_id  TEXT PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
    password_sign_in INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);

-- A member the identity provider deactivated (SCIM active=false): no
-- sign-in of any kind, no session.
ALTER TABLE members ADD COLUMN deactivated_at INTEGER;

-- The SCIM bearer token of an organization: only its SHA-256 is stored.
CREATE TABLE scim_tokens (
    organization_id TEXT PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
    hash            TEXT NOT NULL UNIQUE,
    created_at      INTEGER NOT NULL,
    last_used_at    INTEGER
);

-- What SCIM knows of a member beyond the member's own columns: the
-- userName and externalId the identity provider matches users by.
CREATE TABLE scim_users (
    organization_id TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    user_name       TEXT NOT NULL,
    external_id     TEXT,
    display_name    TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (organization_id, user_id),
    FOREIGN KEY (organization_id, user_id) REFERENCES members (organization_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX scim_users_user_name ON scim_users (organization_id, lower(user_name));
CREATE INDEX scim_users_external_id ON scim_users (organization_id, external_id);

-- The groups an identity provider pushed over SCIM, and their members.
CREATE TABLE scim_groups (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    display_name    TEXT NOT NULL,
    external_id     TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE UNIQUE INDEX scim_groups_display_name ON scim_groups (organization_id, display_name);
CREATE INDEX scim_groups_list ON scim_groups (organization_id, created_at, id);
CREATE INDEX scim_groups_external_id ON scim_groups (organization_id, external_id);
CREATE TABLE scim_group_members (
    group_id        TEXT NOT NULL REFERENCES scim_groups (id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (group_id, user_id),
    FOREIGN KEY (organization_id, user_id) REFERENCES members (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX scim_group_members_user ON scim_group_members (organization_id, user_id);

-- The groups that a member's last OpenID Connect sign-in named in its
-- groups claim.
CREATE TABLE member_claim_groups (
    organization_id TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    group_name      TEXT NOT NULL,
    PRIMARY KEY (organization_id, user_id, group_name),
    FOREIGN KEY (organization_id, user_id) REFERENCES members (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX member_claim_groups_group ON member_claim_groups (organization_id, group_name);

-- What a group of the identity provider gives its members: an
-- organization role (NULL: none) and workspace memberships.
CREATE TABLE group_mappings (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    group_name      TEXT NOT NULL,
    role            TEXT CHECK (role IN ('org:admin', 'org:member')),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    UNIQUE (organization_id, group_name)
);
CREATE INDEX group_mappings_list ON group_mappings (organization_id, created_at, id);
CREATE TABLE group_mapping_workspaces (
    mapping_id   TEXT NOT NULL REFERENCES group_mappings (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    PRIMARY KEY (mapping_id, workspace_id)
);
CREATE INDEX group_mapping_workspaces_workspace ON group_mapping_workspaces (workspace_id);

-- A workspace membership that group mappings gave: the one they may take
-- away again (a membership an admin added stays).
ALTER TABLE workspace_members ADD COLUMN granted_by_groups INTEGER NOT NULL DEFAULT 0;
