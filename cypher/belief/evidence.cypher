// The provenance edges into one belief with their episodes, oldest first.
MATCH (e:Episode {persona_id: $persona_id})-[r:SUPPORTS|CONTRADICTS]->
      (b:Belief {persona_id: $persona_id, topic: $topic})
RETURN e.id AS episode_id,
       r.delta AS delta,
       r.committed_at AS committed_at,
       b.topic AS topic,
       e {.*, embedding: null} AS episode
ORDER BY r.committed_at, e.seq
