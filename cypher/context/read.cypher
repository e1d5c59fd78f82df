// What context reads in one statement where the similar episodes come from the process's
// similarity cache (Neo4j 5.26, or 2026.x without the episode vector index): the persona,
// its CURRENT snapshot, the user's active facts, the beliefs it shows (the $beliefs
// strongest, the $beliefs whose topic is most similar to $embedding, and up to $beliefs not
// embedded yet: bounded, whatever the persona holds), the user's $recent latest episodes
// and the similarity cache's catch-up, with the episodes the cache ranked best before it
// ($opt.ids: the hits by id, episode/by_ids) and, when $props, each caught-up row's episode and
// similarity too, so that the search usually needs no second statement. Each INCLUDE line
// is the named query's text (sonality/storage/neo4j/cypher.py, load). No row: no such
// persona.
MATCH (p:Persona {id: $persona_id})
OPTIONAL MATCH (p)-[:CURRENT]->(s:Snapshot)
CALL () {
  INCLUDE context/facts
}
CALL () {
  INCLUDE context/beliefs_strongest
}
CALL () {
  INCLUDE context/beliefs_unembedded
}
CALL () {
  CALL () {
    INCLUDE context/beliefs_route
  }
  RETURN collect({belief: belief, similarity: similarity}) AS relevant
}
CALL () {
  INCLUDE context/recent
}
// The similarity cache's catch-up (sonality/storage/neo4j/vectors.py; the subqueries of
// episode/vectors, kept in step with it), when $since is not null: the user's embedded
// episodes stamped after $opt.since that the cache does not hold at that stamp ($known) unless
// the user has more than $admit (then the user is searched on the server instead), how
// many embedded episodes the user has, and the server's clock in the unit of the stamps.
// ($opt: the parameters that may be null or an empty list, see
// sonality/storage/neo4j/cypher.py; no similar episodes is an empty $embedding.)
CALL () {
  WITH 1 AS asked
  WHERE $opt.since IS NOT NULL
  MATCH (e:Episode)
  USING INDEX SEEK e:Episode(persona_id, user_id, embedding_rev)
  WHERE e.persona_id = $persona_id AND e.user_id = $user_id AND e.embedding_rev IS NOT NULL
  RETURN count(e) AS embedded
}
CALL (embedded) {
  WITH embedded
  WHERE embedded <= $admit
  MATCH (e:Episode)
  USING INDEX SEEK e:Episode(persona_id, user_id, embedding_rev)
  WHERE e.persona_id = $persona_id AND e.user_id = $user_id AND e.embedding_rev > $opt.since
    AND coalesce($known[e.id] <> e.embedding_rev, true)
  // with $props, each row's episode and similarity as episode/by_ids reads them
  WITH e, CASE WHEN $props THEN e END AS shown
  RETURN collect({id: e.id, rev: e.embedding_rev, seq: e.seq, embedding: e.embedding,
                  episode: shown {.*, embedding: null, created_at: null, thinker_created_at: null,
                                  thinker_updated_at: null,
                                  created_at_us: shown.created_at.epochMillis * 1000
                                                 + shown.created_at.microsecond % 1000},
                  similarity: 2 * vector.similarity.cosine(shown.embedding, $embedding) - 1})
         AS rows
}
CALL () {
  CALL () {
    INCLUDE episode/by_ids
  }
  RETURN collect({episode: episode, similarity: similarity}) AS hits
}
WITH p, s, facts, strongest, unembedded, relevant, recent, embedded, rows, hits,
     datetime.realtime() AS now
RETURN p {.*} AS persona, s {.*} AS snapshot, facts, strongest, unembedded, relevant, recent,
       [] AS similar, embedded, rows, hits,
       (now.epochSeconds * 1000000 + now.microsecond) * 1000 AS now
