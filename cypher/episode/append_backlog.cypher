// An inline record's first unit of work, in one statement: the append (episode/append),
// then, seeing it, the enrichment backlog read for one episode with the pending count
// (enrichment/backlog: the persona's oldest pending episode, the caller's own unless an
// older one waits, and the state its commit is planned from). Each INCLUDE line is the
// named query's text (sonality/storage/neo4j/cypher.py, load). Locks as the append's: the
// conversation only. No row: no such persona.
CALL () {
  INCLUDE episode/append
}
CALL () {
  INCLUDE enrichment/backlog
}
RETURN episode, created, persona, episodes, staged, facts, influence, pending
