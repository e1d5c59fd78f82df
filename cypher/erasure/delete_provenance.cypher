// Provenance edges committed at or after $from (the replay writes them again), and any
// into a belief about to go.
MATCH (:Episode {persona_id: $persona_id})-[r:SUPPORTS|CONTRADICTS]->
      (b:Belief {persona_id: $persona_id})
WHERE r.committed_at >= $from OR b.topic IN $topics
DELETE r
RETURN count(*) AS deleted
