// 02 Beliefs ranked by |position| x confidence
// Parameters: persona. The strongest held opinions first; retired beliefs last.
MATCH (b:Belief {persona_id: $persona})
RETURN b.topic AS topic,
       round(b.position, 3) AS position,
       round(b.confidence, 3) AS confidence,
       round(abs(b.position) * b.confidence, 4) AS weight,
       b.evidence_count AS evidence,
       b.last_reinforced_at AS last_reinforced_at_interaction,
       b.status AS status
ORDER BY b.status = 'retired', weight DESC, topic
