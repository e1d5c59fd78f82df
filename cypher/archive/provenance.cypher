MATCH (e:Episode {persona_id: $persona_id})-[r:SUPPORTS|CONTRADICTS]->
      (b:Belief {persona_id: $persona_id})
RETURN e.id AS episode_id, b.topic AS topic, r.delta AS delta, r.committed_at AS committed_at
