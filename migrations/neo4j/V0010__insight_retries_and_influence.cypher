// Reliability (issue 15): an enriched episode's insight part can be retried on its own.
// (A belief's moves within the influence window are list properties; they need no schema.
// A user's recent staged deltas are read by staged_at through the index V0040 creates.)
CREATE INDEX episode_persona_insight_status IF NOT EXISTS
FOR (n:Episode) ON (n.persona_id, n.insight_status);

// Episodes enriched before this migration whose insight reply was unreadable (listed in
// defaulted) lost their insight: they are retried like any pending insight part.
MATCH (e:Episode {enrichment_status: 'enriched'})
WHERE e.insight_status IS NULL
SET e.insight_status = CASE WHEN 'insight' IN e.defaulted THEN 'pending' ELSE 'extracted' END;
