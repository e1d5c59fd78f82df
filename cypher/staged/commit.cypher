// Mark uncommitted staged deltas as netted into beliefs at interaction $committed_at.
// Returns how many were marked: fewer than given means an id was unknown or committed.
UNWIND $ids AS staged_id
MATCH (s:StagedUpdate {persona_id: $persona_id, id: staged_id})
WHERE s.committed_at IS NULL
SET s.committed_at = $committed_at
RETURN count(s) AS committed
