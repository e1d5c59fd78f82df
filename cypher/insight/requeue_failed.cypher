// Failed insight parts back to pending (those with fewer attempts than $opt.below_attempts,
// or all when it is null).
MATCH (e:Episode {persona_id: $persona_id, insight_status: 'failed'})
WHERE $opt.below_attempts IS NULL OR coalesce(e.insight_attempts, 0) < $opt.below_attempts
SET e.insight_status = 'pending'
RETURN count(e) AS requeued
