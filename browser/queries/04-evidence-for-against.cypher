// 04 Evidence for and against one belief
// Parameters: persona, topic. Every committed delta with the message that caused it.
MATCH (e:Episode {persona_id: $persona})-[edge:SUPPORTS|CONTRADICTS]->
      (b:Belief {persona_id: $persona, topic: $topic})
RETURN CASE type(edge) WHEN 'SUPPORTS' THEN 'for' ELSE 'against' END AS side,
       round(edge.delta, 4) AS delta,
       edge.committed_at AS committed_at_interaction,
       e.created_at AS said_at,
       e.user_id AS user,
       e.ess_score AS evidence_score,
       e.ess_reasoning_type AS reasoning,
       left(e.user_message, 160) AS excerpt,
       e.id AS episode
ORDER BY side DESC, abs(delta) DESC, committed_at_interaction
