// An affect state last changed by one of the erased exchanges loses what it read from it:
// the interpretation of the message, the appraisal and the plan (a new version).
MATCH (a:AffectState {persona_id: $persona_id})
WHERE a.episode_id IN $ids
SET a.interpretation = null, a.appraisal = null, a.plan = null, a.episode_id = null,
    a.version = a.version + 1
RETURN count(a) AS cleared
