// 06 How one belief moved over time
// Parameters: persona, topic. One row per commit: the netted change (capped at the default
// 0.25 per commit) and the running position, clamped to [-1, 1].
MATCH (e:Episode {persona_id: $persona})-[edge:SUPPORTS|CONTRADICTS]->
      (b:Belief {persona_id: $persona, topic: $topic})
WITH b, edge.committed_at AS interaction, sum(edge.delta) AS net, count(*) AS items,
     collect(left(e.user_message, 80)) AS evidence, max(e.created_at) AS last_said_at
ORDER BY interaction
WITH b, collect({
       interaction: interaction,
       change: CASE WHEN net > 0.25 THEN 0.25 WHEN net < -0.25 THEN -0.25 ELSE net END,
       items: items, evidence: evidence, last_said_at: last_said_at
     }) AS commits
UNWIND range(0, size(commits) - 1) AS i
WITH b, commits[i] AS c,
     reduce(position = 0.0, step IN commits[0..i + 1] |
       CASE WHEN position + step.change > 1.0 THEN 1.0
            WHEN position + step.change < -1.0 THEN -1.0
            ELSE position + step.change END) AS position
RETURN c.interaction AS interaction,
       c.last_said_at AS said_at,
       round(c.change, 4) AS change,
       round(position, 4) AS position_after,
       c.items AS evidence_items,
       c.evidence AS evidence,
       round(b.position, 4) AS position_now
ORDER BY interaction
