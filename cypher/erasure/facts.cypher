// The facts that name one of the episodes $ids as a source (facts of those episodes'
// users only).
MATCH (e:Episode {persona_id: $persona_id})
WHERE e.id IN $ids
WITH collect(DISTINCT e.user_id) AS users
MATCH (f:UserFact {persona_id: $persona_id})
WHERE f.user_id IN users
  AND (f.episode_id IN $ids OR any(other IN coalesce(f.also_from, []) WHERE other IN $ids))
RETURN f {.*} AS fact
