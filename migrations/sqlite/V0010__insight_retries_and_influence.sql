-- Reliability (issue 15): an enriched episode's insight part can be retried on its own,
-- each belief remembers its moves within the influence window (the cap on a topic's net
-- move per window). A user's recent staged deltas are read by staged_at through the index
-- V0040 creates.
ALTER TABLE episodes ADD COLUMN insight_status TEXT
    CHECK (insight_status IS NULL OR insight_status IN ('extracted', 'pending', 'failed'));
ALTER TABLE episodes ADD COLUMN insight_attempts INTEGER NOT NULL DEFAULT 0;

-- Episodes enriched before this migration whose insight reply was unreadable (listed in
-- "defaulted") lost their insight: they are retried like any pending insight part.
UPDATE episodes
SET insight_status = CASE WHEN defaulted LIKE '%"insight"%' THEN 'pending' ELSE 'extracted' END
WHERE enrichment_status = 'enriched';

CREATE INDEX episodes_by_insight_status ON episodes (persona_id, insight_status, seq);

ALTER TABLE beliefs ADD COLUMN moves_at TEXT NOT NULL DEFAULT '[]';
ALTER TABLE beliefs ADD COLUMN moves_from TEXT NOT NULL DEFAULT '[]';
