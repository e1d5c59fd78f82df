// Store a batch of raw exchanges of one persona (enrichment pending), in one statement:
// $conversations groups the batch by conversation, each with its rows in batch order
// ({index, at_s, at_ns, episode, embedding}; created_at as epoch seconds and nanoseconds,
// made a UTC DateTime here, as a conversation's at_s/at_ns). Rows whose id is stored already are not written and come
// back in `existing` for the adapter's same-exchange check; the others become the next
// turns of their conversation, NEXT-chained after its last episode. seq: the statement's
// clock in microseconds times 1000 (the scale of episode/append) plus the row's index, kept above the previous batch's (the
// persona's bulk_seq_next, under the persona's write lock: one bulk loader at a time per
// persona, single appends still lock only their conversation) and above the
// conversation's last seq. No row: no such persona.
MATCH (p:Persona {id: $persona_id})
WITH p, datetime.statement() AS now
WITH p, (now.epochSeconds * 1000000 + now.microsecond) * 1000 AS clock
WITH p, CASE WHEN coalesce(p.bulk_seq_next, 0) > clock THEN p.bulk_seq_next ELSE clock END AS floor
SET p.bulk_seq_next = floor + $size
WITH p, floor
CALL (p, floor) {
  UNWIND $conversations AS conv
  CALL (conv) {
    UNWIND conv.rows AS row
    OPTIONAL MATCH (x:Episode {persona_id: $persona_id, id: row.episode.id})
    WITH row, x
    ORDER BY row.index
    RETURN collect(CASE WHEN x IS NULL THEN row END) AS fresh,
           collect(CASE WHEN x IS NULL THEN null ELSE x {.*, embedding: null} END) AS existing
  }
  CALL (p, conv, fresh, floor) {
    WITH p, conv, fresh, floor
    WHERE size(fresh) > 0
    MERGE (u:User {persona_id: $persona_id, id: conv.user_id})
      ON CREATE SET u.created_at = datetime.fromepoch(conv.at_s, conv.at_ns)
    MERGE (p)-[:TALKS_WITH]->(u)
    MERGE (c:Conversation {persona_id: $persona_id, id: conv.id})
      ON CREATE SET c.user_id = conv.user_id, c.last_turn = 0,
        c.created_at = datetime.fromepoch(conv.at_s, conv.at_ns)
    MERGE (u)-[:HAD]->(c)
    // the conversation's write lock before its turn counter is read, as episode/append
    // takes it: a single append into the same conversation then waits, never interleaves
    SET c._lock = true
    REMOVE c._lock
    WITH c, fresh, floor, c.last_turn AS base, c.last_episode_id AS previous_id
    SET c.last_turn = base + size(fresh),
        c.last_episode_id = fresh[size(fresh) - 1].episode.id
    WITH c, fresh, floor, base, previous_id
    OPTIONAL MATCH (previous:Episode {persona_id: $persona_id, id: previous_id})
    WITH c, fresh, base, previous,
         CASE WHEN previous IS NOT NULL AND previous.seq >= floor
              THEN previous.seq + 1 ELSE floor END AS start
    UNWIND range(0, size(fresh) - 1) AS i
    WITH c, previous, fresh[i] AS row, base + i + 1 AS turn, start
    CREATE (e:Episode)
    SET e = row.episode,
        e.created_at = datetime.fromepoch(row.at_s, row.at_ns),
        e.turn = turn,
        e.seq = start + row.index,
        // display-only: a short caption for Neo4j Browser
        e.excerpt = CASE WHEN size(row.episode.user_message) > 30
          THEN left(row.episode.user_message, 29) + '…' ELSE row.episode.user_message END
    SET e.caption = replace(substring(toString(e.created_at), 5, 11), 'T', ' ') + ' ' + e.excerpt,
        // the similarity caches' revision stamp (see sonality/storage/neo4j/vectors.py)
        e.embedding_rev = CASE WHEN row.embedding IS NULL THEN null ELSE e.seq END
    CREATE (c)-[:HAS_EPISODE]->(e)
    WITH previous, e, row
    CALL (e, row) {
      WITH e, row
      WHERE row.embedding IS NOT NULL
      CALL db.create.setNodeVectorProperty(e, 'embedding', row.embedding)
    }
    WITH previous, e
    ORDER BY e.turn
    WITH previous, collect(e) AS created
    WITH CASE WHEN previous IS NULL THEN created ELSE [previous] + created END AS chain
    FOREACH (i IN range(1, size(chain) - 1) |
      FOREACH (a IN [chain[i - 1]] |
        FOREACH (b IN [chain[i]] | CREATE (a)-[:NEXT]->(b))
      )
    )
    RETURN count(*) AS written
  }
  RETURN collect(existing) AS existing
}
RETURN reduce(all = [], part IN existing | all + part) AS existing
