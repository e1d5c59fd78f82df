// Store a raw exchange (enrichment pending) as the next turn of its conversation.
// The caller locked the persona first; the SET on the conversation's last_turn reads it
// under a write lock too, so concurrent appends get consecutive turns and one NEXT chain.
// No row: the persona does not exist (nothing written).
MATCH (p:Persona {id: $persona_id})
SET p.episode_seq = p.episode_seq + 1
MERGE (u:User {persona_id: $persona_id, id: $user_id})
  ON CREATE SET u.created_at = $created_at
MERGE (p)-[:TALKS_WITH]->(u)
MERGE (c:Conversation {persona_id: $persona_id, id: $conversation_id})
  ON CREATE SET c.user_id = $user_id, c.last_turn = 0, c.created_at = $created_at
MERGE (u)-[:HAD]->(c)
SET c.last_turn = c.last_turn + 1
WITH p, c, c.last_episode_id AS previous_id
OPTIONAL MATCH (previous:Episode {persona_id: $persona_id, id: previous_id})
CREATE (e:Episode $episode)
SET e.seq = p.episode_seq,
    e.turn = c.last_turn,
    c.last_episode_id = e.id,
    // display-only: a short caption for Neo4j Browser
    e.excerpt = CASE WHEN size(e.user_message) > 30
      THEN left(e.user_message, 29) + '…' ELSE e.user_message END
SET e.caption = replace(substring(toString(e.created_at), 5, 11), 'T', ' ') + ' ' + e.excerpt
CREATE (c)-[:HAS_EPISODE]->(e)
FOREACH (prev IN CASE WHEN previous IS NULL THEN [] ELSE [previous] END |
  CREATE (prev)-[:NEXT]->(e)
)
RETURN e {.*, embedding: null} AS episode
