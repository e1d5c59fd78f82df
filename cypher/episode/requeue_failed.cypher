// Failed episodes back to pending (those with fewer counted attempts than
// $opt.below_attempts, or all when it is null); their attempts keep counting.
MATCH (e:Episode {persona_id: $persona_id, enrichment_status: 'failed'})
WHERE $opt.below_attempts IS NULL OR e.enrichment_attempts < $opt.below_attempts
SET e.enrichment_status = 'pending'
RETURN count(e) AS requeued
