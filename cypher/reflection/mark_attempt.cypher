// Move the persona's last reflection attempt forward (never back).
MATCH (p:Persona {id: $persona_id})
SET p.last_reflection_attempt_at = CASE
  WHEN coalesce(p.last_reflection_attempt_at, 0) > $attempt_at
  THEN p.last_reflection_attempt_at
  ELSE $attempt_at
END
RETURN p.id AS id
