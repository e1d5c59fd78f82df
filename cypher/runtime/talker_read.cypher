// Everything the Talker reads on a reply, in one statement where the context comes from
// context/read (Neo4j 5.26, or 2026.x without the filtered vector indexes): the context,
// then runtime/talker_view beside it. The two parts' parameters are disjoint but for $opt,
// which carries the keys of both (since and ids; user_id and since_interaction). Each
// INCLUDE line is the named query's text (sonality/storage/neo4j/cypher.py, load). No
// row: no such persona.
CALL () {
  INCLUDE context/read
}
CALL () {
  INCLUDE runtime/talker_view
}
RETURN persona, snapshot, facts, strongest, unembedded, relevant, recent, similar, embedded,
       rows, hits, now, newest, first, affect, state, monologue
