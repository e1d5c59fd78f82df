-- The metrics key scope: a key that reads the server's /metrics and nothing else. SQLite
-- cannot change a CHECK constraint in place, so the table is rebuilt with the same rows.
CREATE TABLE api_keys_v0260 (
    id TEXT NOT NULL PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    scope TEXT NOT NULL CHECK (scope IN ('read', 'write', 'admin', 'metrics')),
    persona_ids TEXT NOT NULL DEFAULT '[]',
    name TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    incarnations TEXT
) WITHOUT ROWID;
INSERT INTO api_keys_v0260 (
    id, secret_hash, scope, persona_ids, name, created_at, revoked_at, incarnations
)
SELECT id, secret_hash, scope, persona_ids, name, created_at, revoked_at, incarnations
FROM api_keys;
DROP TABLE api_keys;
ALTER TABLE api_keys_v0260 RENAME TO api_keys;
