// Belief decay starts from the confidence a belief had when it was last reinforced
// (issue 10: decay is a function of that and the gap, never of an earlier decayed value).
// Every reinforcement sets confidence = log2(evidence_count + 1) / log2(20), capped at 1,
// so that is what existing beliefs were last reinforced at; a stored confidence above it
// (written by hand) is kept as the starting point instead.
MATCH (b:Belief)
WHERE b.reinforced_confidence IS NULL
WITH b, CASE WHEN b.evidence_count >= 19 THEN 1.0
             ELSE log(b.evidence_count + 1) / log(20) END AS earned
SET b.reinforced_confidence = CASE WHEN b.confidence > earned THEN b.confidence ELSE earned END;
