// Chain each conversation's remaining episodes in turn order (NEXT edges around the
// episodes about to go; links already there stay) and point its head at the last one.
UNWIND $conversations AS row
MATCH (c:Conversation {persona_id: $persona_id, id: row.id})
CALL (c) {
  OPTIONAL MATCH (c)-[:HAS_EPISODE]->(e:Episode)
  WHERE NOT e.id IN $ids
  WITH e
  ORDER BY e.turn
  RETURN collect(e) AS kept
}
FOREACH (i IN range(0, size(kept) - 2) |
  FOREACH (a IN [kept[i]] |
    FOREACH (b IN [kept[i + 1]] |
      MERGE (a)-[:NEXT]->(b)
    )
  )
)
SET c.last_episode_id = CASE WHEN size(kept) = 0 THEN null ELSE kept[size(kept) - 1].id END
RETURN c.id AS id, size(kept) AS kept
