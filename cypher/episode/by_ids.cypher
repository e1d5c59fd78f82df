// The user's embedded episodes among $opt.ids (a similarity cache's candidates; in $opt
// because context/read includes this and its list may be empty) with their
// similarity computed here as the exact scan computes it (Neo4j reports cosine as
// (1 + cos) / 2, mapped back to [-1, 1]); an id missing from the answer was deleted, moved
// out of the user's scope or lost its embedding. created_at comes as microseconds since the
// epoch (created_at_us): the driver's DateTime is the costliest value to read. The hint
// keeps each id a unique-index seek: planned on few episodes, the planner took the
// user's (persona_id, user_id, embedding_rev) index instead and read all of the user's
// episodes once per id (tests/neo4j/test_query_plans.py).
UNWIND $opt.ids AS id
MATCH (e:Episode {persona_id: $persona_id, id: id})
USING INDEX SEEK e:Episode(persona_id, id)
WHERE e.user_id = $user_id AND e.embedding_rev IS NOT NULL
RETURN e {.*, embedding: null, created_at: null, thinker_created_at: null,
          thinker_updated_at: null,
          created_at_us: e.created_at.epochMillis * 1000 + e.created_at.microsecond % 1000} AS episode,
       2 * vector.similarity.cosine(e.embedding, $embedding) - 1 AS similarity
