// Each conversation's narrative versions, each PREVIOUS to the next older one.
MATCH (c:Conversation {persona_id: $persona_id})-[:NARRATIVE]->(n:Narrative)
WITH c, n
ORDER BY n.version
WITH c, collect(n) AS versions
FOREACH (i IN range(1, size(versions) - 1) |
  FOREACH (newer IN [versions[i]] |
    FOREACH (older IN [versions[i - 1]] | CREATE (newer)-[:PREVIOUS]->(older))
  )
)
RETURN count(c) AS linked
