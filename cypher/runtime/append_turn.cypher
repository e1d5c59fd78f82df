// A turn answered by `respond`, in one statement: the exchange appended as the next turn of
// its conversation (episode/append), then, when this statement created it, the turn
// registered on it with the Talker's usage (runtime/begin_turn with $turn null: the turn
// number is the one the append just gave). One auto-commit unit of work, so the
// conversation's lock (and a joining user's persona lock) is held only while the server
// runs it, not across round trips to the caller. An id stored before registers nothing
// here (written 0): the adapter reads its turn, or registers it in a transaction of its
// own. No row: no such persona. Each INCLUDE line is the named query's text
// (sonality/storage/neo4j/cypher.py, load).
CALL () {
  INCLUDE episode/append
}
CALL (created) {
  WITH created
  WHERE created
  INCLUDE runtime/begin_turn
UNION
  WITH created
  WHERE NOT created
  RETURN null AS id, 0 AS written
}
RETURN episode, created, written
