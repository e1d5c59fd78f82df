// A successful reflection, in one statement. First the persona's write lock, then the
// checks: $lease_owner still holds the lease and the CURRENT snapshot is still version
// $expected_version. When either moved, nothing is written and found_owner/found_version
// say why (the adapter raises LeaseHeld or ConflictError). Otherwise: the new snapshot
// after CURRENT (when $opt.snapshot is not null), the Reflection node with its display label,
// PRODUCED and CONSUMED edges, exactly the insights read marked consumed (fewer than
// given: the adapter refuses the commit), decayed beliefs nobody reinforced meanwhile, the
// persona's reflection markers, and snapshot retention ($opt.prune_through: delete versions up
// to it, never CURRENT; null keeps all). No row: no such persona.
MATCH (p:Persona {id: $persona_id})
SET p._lock = true
REMOVE p._lock
WITH p
OPTIONAL MATCH (p)-[:CURRENT]->(current:Snapshot)
OPTIONAL MATCH (p)-[:LEASE]->(lease:ReflectionLease {persona_id: $persona_id})
WITH p, current, coalesce(current.version, 0) AS found_version, lease.owner AS found_owner
WITH p, current, found_version, found_owner,
     coalesce(found_owner = $lease_owner, false) AND found_version = $expected_version AS ok
// the new snapshot becomes CURRENT
CALL (p, current, ok) {
  WITH p, current, ok
  WHERE ok AND $opt.snapshot IS NOT NULL
  MATCH (p)-[link:CURRENT]->(current)
  CREATE (s:Snapshot)
  SET s = $opt.snapshot
  CREATE (p)-[:CURRENT]->(s)
  CREATE (s)-[:PREVIOUS]->(current)
  DELETE link
}
// (Persona)-[:REFLECTED]->(Reflection)-[:PRODUCED]->(Snapshot), -[:CONSUMED]->(Insight)
CALL (p, ok) {
  WITH p, ok
  WHERE ok
  CREATE (r:Reflection)
  SET r = $reflection, r:Committed
  CREATE (p)-[:REFLECTED]->(r)
  WITH r
  OPTIONAL MATCH (produced:Snapshot {persona_id: $persona_id, version: $opt.produced})
  FOREACH (s IN CASE WHEN produced IS NULL THEN [] ELSE [produced] END |
    CREATE (r)-[:PRODUCED]->(s)
  )
  WITH r
  CALL (r) {
    UNWIND $opt.insight_ids AS insight_id
    MATCH (i:Insight {persona_id: $persona_id, id: insight_id})
    WHERE i.status = 'pending'
    SET i.status = 'consumed', i:Consumed
    CREATE (r)-[:CONSUMED]->(i)
    RETURN count(i) AS consumed
  }
  // one row even when the checks failed, so the caller always gets its answer
  RETURN sum(consumed) AS consumed
}
// decay: only beliefs still as the reflection read them (not reinforced meanwhile)
CALL (ok) {
  WITH ok
  WHERE ok
  UNWIND $beliefs AS belief
  MATCH (b:Belief {persona_id: $persona_id, topic: belief.topic})
  WHERE b.status = 'active'
    AND b.last_reinforced_at = belief.last_reinforced_at
    AND b.evidence_count = belief.evidence_count
  SET b.confidence = belief.confidence,
      b.strength = abs(b.position) * belief.confidence,
      b.uncertainty = belief.uncertainty,
      b.status = belief.status,
      b.updated_at = belief.updated_at
  REMOVE b:Firm:Retired
  FOREACH (_ IN CASE WHEN b.confidence >= 0.5 THEN [1] ELSE [] END | SET b:Firm)
  FOREACH (_ IN CASE WHEN b.status = 'retired' THEN [1] ELSE [] END | SET b:Retired)
  RETURN count(b) AS decayed
}
// the persona's markers: the shift read at the start is subtracted, not reset
CALL (p, ok) {
  WITH p, ok
  WHERE ok
  WITH p, p.shift_since_reflection - $shift_consumed AS left
  SET p.last_reflection_at = $last_reflection_at,
      p.last_reflection_attempt_at = $last_reflection_at,
      p.shift_since_reflection = CASE WHEN left < 0.0 THEN 0.0 ELSE left END
}
// retention: the oldest versions go first, so the PREVIOUS chain left is unbroken
CALL (p, ok) {
  WITH p, ok
  WHERE ok AND $opt.prune_through IS NOT NULL
  MATCH (old:Snapshot {persona_id: $persona_id})
  WHERE old.version <= $opt.prune_through AND NOT EXISTS { MATCH (p)-[:CURRENT]->(old) }
  DETACH DELETE old
}
RETURN found_owner, found_version, consumed
