// Reliability (issue 15): an enriched episode's insight part can be retried on its own,
// and a user's recent staged deltas are read by staged_at. (A belief's moves within the
// influence window are list properties; they need no schema.)
CREATE INDEX episode_persona_insight_status IF NOT EXISTS
FOR (n:Episode) ON (n.persona_id, n.insight_status);

CREATE INDEX staged_update_persona_staged IF NOT EXISTS
FOR (n:StagedUpdate) ON (n.persona_id, n.staged_at);

// Episodes enriched before this migration whose insight reply was unreadable (listed in
// defaulted) lost their insight: they are retried like any pending insight part.
MATCH (e:Episode {enrichment_status: 'enriched'})
WHERE e.insight_status IS NULL
SET e.insight_status = CASE WHEN 'insight' IN e.defaulted THEN 'pending' ELSE 'extracted' END;
