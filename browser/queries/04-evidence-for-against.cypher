// 04 Evidence for and against one belief
// Parameters: persona, topic. Every committed delta with the message that caused it. The
// side is relative to the persona's stance now: "for" pushed the way the belief leans
// (a CONTRADICTS edge into an opposed belief is "for" it), "against" pushed the other
// way; with no stance yet (position 0) every delta is "no stance yet". The delta keeps
// its sign on the topic (+ favours the topic, - opposes it).
MATCH (e:Episode {persona_id: $persona})-[edge:SUPPORTS|CONTRADICTS]->
      (b:Belief {persona_id: $persona, topic: $topic})
RETURN CASE WHEN b.position = 0 OR edge.delta = 0 THEN 'no stance yet'
            WHEN sign(edge.delta) = sign(b.position) THEN 'for'
            ELSE 'against' END AS side,
       round(b.position, 4) AS stance,
       round(edge.delta, 4) AS delta,
       edge.committed_at AS committed_at_interaction,
       e.created_at AS said_at,
       e.user_id AS user,
       e.ess_score AS evidence_score,
       e.ess_reasoning_type AS reasoning,
       left(e.user_message, 160) AS excerpt,
       e.id AS episode
ORDER BY side DESC, abs(delta) DESC, committed_at_interaction
