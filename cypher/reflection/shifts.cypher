// Provenance edges committed after interaction $since, newest first. A belief's
// last_reinforced_at is at least the committed_at of every edge into it, so only beliefs
// reinforced since then are expanded.
MATCH (b:Belief {persona_id: $persona_id})
WHERE b.last_reinforced_at > $since
MATCH (e:Episode {persona_id: $persona_id})-[r:SUPPORTS|CONTRADICTS]->(b)
WHERE r.committed_at > $since
RETURN e.id AS episode_id, b.topic AS topic, r.delta AS delta, r.committed_at AS committed_at
ORDER BY r.committed_at DESC, e.seq DESC
LIMIT $limit
