// What a similarity cache needs to catch up with one user (sonality/storage/neo4j/vectors.py):
// the user's episodes (id, stamp, seq: the tie-break, embedding) stamped after $since
// that the cache does not hold at that stamp ($known: id -> stamp of the cached rows
// stamped after $since; none when the user has more than $admit, the most the cache's
// memory budget takes), how many embedded
// episodes the user has (both through the (persona_id, user_id, embedding_rev) index; the
// count touches no node) and the server's clock in the unit of the stamps. context/read
// embeds the same subqueries (keep them in step).
CALL () {
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
  WHERE e.persona_id = $persona_id AND e.user_id = $user_id AND e.embedding_rev > $since
    AND coalesce($known[e.id] <> e.embedding_rev, true)
  RETURN collect({id: e.id, rev: e.embedding_rev, seq: e.seq, embedding: e.embedding}) AS rows
}
WITH embedded, rows, datetime.realtime() AS now
RETURN embedded, rows, (now.epochSeconds * 1000000 + now.microsecond) * 1000 AS now
