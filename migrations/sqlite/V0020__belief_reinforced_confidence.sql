-- Belief decay starts from the confidence a belief had when it was last reinforced
-- (issue 10: decay is a function of that and the gap, never of an earlier decayed value).
-- Every reinforcement sets confidence = log2(evidence_count + 1) / log2(20), capped at 1,
-- so that is what existing beliefs were last reinforced at; a stored confidence above it
-- (written by hand) is kept as the starting point instead. The values below are that
-- formula for 0..18 pieces of evidence (19 and more give 1.0), so the step needs no math
-- functions in SQLite.
ALTER TABLE beliefs ADD COLUMN reinforced_confidence REAL;

UPDATE beliefs SET reinforced_confidence = max(
    confidence,
    CASE
        WHEN 0 THEN 0.0
        WHEN 1 THEN 0.23137821315975915
        WHEN 2 THEN 0.3667257913420846
        WHEN 3 THEN 0.4627564263195183
        WHEN 4 THEN 0.5372435736804816
        WHEN 5 THEN 0.5981040045018438
        WHEN 6 THEN 0.6495607655709434
        WHEN 7 THEN 0.6941346394792774
        WHEN 8 THEN 0.7334515826841692
        WHEN 9 THEN 0.7686217868402407
        WHEN 10 THEN 0.8004371064686713
        WHEN 11 THEN 0.8294822176616029
        WHEN 12 THEN 0.8562011298888887
        WHEN 13 THEN 0.8809389787307026
        WHEN 14 THEN 0.9039693650225663
        WHEN 15 THEN 0.9255128526390366
        WHEN 16 THEN 0.9457498485654158
        WHEN 17 THEN 0.9648297958439284
        WHEN 18 THEN 0.9828778776927556
        ELSE 1.0
    END
);
