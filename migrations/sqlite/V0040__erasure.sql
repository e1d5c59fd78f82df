-- Forgetting and correcting (issue 12): the persona's snapshot-review marker, set when an
-- erasure removed material a snapshot version may quote, and the erasure audit records.
-- Erasure records name no user and hold no text (subject is a digest); they outlive the
-- persona they belong to, so they have no foreign key to it.
ALTER TABLE personas ADD COLUMN review_from_version INTEGER;

CREATE TABLE erasures (
    persona_id TEXT NOT NULL,
    id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('user', 'episode', 'persona')),
    subject TEXT NOT NULL,
    created_at TEXT NOT NULL,
    episodes INTEGER NOT NULL DEFAULT 0,
    facts INTEGER NOT NULL DEFAULT 0,
    insights INTEGER NOT NULL DEFAULT 0,
    beliefs_changed INTEGER NOT NULL DEFAULT 0,
    beliefs_removed INTEGER NOT NULL DEFAULT 0,
    review_from_version INTEGER,
    PRIMARY KEY (persona_id, id)
) WITHOUT ROWID;

-- The replay rewrites staged updates from an interaction on.
CREATE INDEX staged_updates_by_staged_at ON staged_updates (persona_id, staged_at);
