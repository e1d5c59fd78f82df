// A new narrative version: linked to its conversation, to the episode it was regenerated
// after, and PREVIOUS to the version it replaces. The caller holds the conversation lock
// and has checked the version; the (persona_id, conversation_id, version) constraint
// backs it.
MATCH (c:Conversation {persona_id: $persona_id, id: $conversation_id})
      -[:HAS_EPISODE]->(e:Episode {persona_id: $persona_id, id: $episode_id})
OPTIONAL MATCH (c)-[:NARRATIVE]->(previous:Narrative)
  WHERE previous.version = c.narrative_version
CREATE (n:Narrative $narrative)
CREATE (c)-[:NARRATIVE]->(n)
CREATE (n)-[:AFTER]->(e)
FOREACH (p IN CASE WHEN previous IS NULL THEN [] ELSE [previous] END |
  CREATE (n)-[:PREVIOUS]->(p)
)
RETURN n.version AS version
