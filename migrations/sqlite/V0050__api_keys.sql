-- API keys of the HTTP server: the public id and the SHA-256 of the secret, never the
-- secret. persona_ids is a JSON list (empty: every persona, admin keys only).
CREATE TABLE api_keys (
    id TEXT NOT NULL PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    scope TEXT NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    persona_ids TEXT NOT NULL DEFAULT '[]',
    name TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    revoked_at TEXT
) WITHOUT ROWID;
