// Uncommitted staged deltas (all, or those due by $opt.due_by), in the order they net.
MATCH (s:StagedUpdate {persona_id: $persona_id})
USING INDEX SEEK s:StagedUpdate(persona_id, due_at)
WHERE s.due_at IS NOT NULL AND s.committed_at IS NULL
  AND ($opt.due_by IS NULL OR s.due_at <= $opt.due_by)
RETURN s {.*} AS staged
ORDER BY s.due_at, s.staged_at, s.id
