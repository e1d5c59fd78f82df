// 07 Pending insights, waiting for the next reflection
// Parameters: persona. Each with the exchange it came from.
MATCH (i:Insight {persona_id: $persona, status: 'pending'})
OPTIONAL MATCH (e:Episode {persona_id: $persona})-[:YIELDED]->(i)
RETURN i.created_at AS noted_at,
       i.text AS insight,
       e.user_id AS user,
       left(e.user_message, 120) AS from_message,
       e.id AS episode
ORDER BY noted_at
