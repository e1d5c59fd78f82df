// Staged updates the replay writes again: born or committed at or after $from, or pending.
MATCH (s:StagedUpdate {persona_id: $persona_id})
WHERE s.staged_at >= $from OR s.committed_at IS NULL OR s.committed_at >= $from
DETACH DELETE s
RETURN count(*) AS deleted
