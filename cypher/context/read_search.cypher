CYPHER 25
// What context reads in one statement on Neo4j 2026.x with the filtered vector indexes:
// the persona, its CURRENT snapshot, the user's active facts, the beliefs it shows (the
// $beliefs strongest, the $beliefs whose topic is most similar to $embedding through
// belief_topic_embedding's own filter, and up to $beliefs not embedded yet), the user's
// $recent latest episodes and the user's $k most similar episodes through
// episode_embedding's own filter: every part bounded by what it returns, and one round
// trip. Each INCLUDE line is the named query's text (sonality/storage/neo4j/cypher.py,
// load). No row: no such persona.
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
    INCLUDE context/beliefs_search
  }
  RETURN collect({belief: belief, similarity: similarity}) AS relevant
}
CALL () {
  INCLUDE context/recent
}
CALL () {
  CALL () {
    INCLUDE episode/similar_search
  }
  RETURN collect({episode: episode, similarity: similarity}) AS similar
}
RETURN p {.*} AS persona, s {.*} AS snapshot, facts, strongest, unembedded, relevant, recent,
       similar, null AS embedded, [] AS rows, null AS now
