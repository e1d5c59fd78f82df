// Apply decayed confidence (and retirement) to beliefs nobody reinforced since the
// reflection read them; a reinforced belief keeps its newer state. The display labels
// Neo4j Browser styles by (Firm, Retired) follow the new state.
UNWIND $beliefs AS belief
MATCH (b:Belief {persona_id: $persona_id, topic: belief.topic})
WHERE b.status = 'active'
  AND b.last_reinforced_at = belief.last_reinforced_at
  AND b.evidence_count = belief.evidence_count
SET b.confidence = belief.confidence,
    b.uncertainty = belief.uncertainty,
    b.status = belief.status,
    b.updated_at = belief.updated_at
REMOVE b:Firm:Retired
FOREACH (_ IN CASE WHEN b.confidence >= 0.5 THEN [1] ELSE [] END | SET b:Firm)
FOREACH (_ IN CASE WHEN b.status = 'retired' THEN [1] ELSE [] END | SET b:Retired)
RETURN count(b) AS updated
