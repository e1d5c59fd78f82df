// 08 Reflection history, outcomes and health warnings
// Parameters: persona. Newest first. A rejected or failed reflection kept the old snapshot
// and left its insights pending. No rows: the persona has not reflected yet.
MATCH (r:Reflection {persona_id: $persona})
OPTIONAL MATCH (r)-[:PRODUCED]->(s:Snapshot)
OPTIONAL MATCH (r)-[:CONSUMED]->(i:Insight)
WITH r, s, count(i) AS consumed
RETURN r.started_at AS started_at,
       r.trigger AS trigger,
       r.outcome AS outcome,
       r.reason AS reason,
       r.detail AS detail,
       coalesce(s.version, r.snapshot_version) AS snapshot_version,
       consumed AS insights_consumed,
       r.episodes_read AS episodes_read,
       r.beliefs_decayed AS beliefs_decayed,
       r.beliefs_retired AS beliefs_retired,
       round(r.retention_ratio, 2) AS retention_ratio,
       round(r.unique_ratio, 2) AS unique_ratio,
       r.health AS health_warnings,
       round(r.duration_ms) AS duration_ms
ORDER BY started_at DESC
