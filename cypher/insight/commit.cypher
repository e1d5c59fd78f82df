// A retried insight extraction: the episode's insight text and status, and the Insight
// it yielded when there is one: (Episode)-[:YIELDED]->(Insight).
MATCH (e:Episode {persona_id: $persona_id, id: $episode_id})
SET e.insight = $opt.text, e.insight_status = 'extracted'
FOREACH (insight IN CASE WHEN $opt.insight IS NULL THEN [] ELSE [$opt.insight] END |
  CREATE (i:Insight)
  SET i = insight
  CREATE (e)-[:YIELDED]->(i)
)
RETURN e.id AS id
