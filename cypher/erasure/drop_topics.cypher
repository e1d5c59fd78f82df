// Topics no belief is about and no episode mentions any more.
MATCH (t:Topic {persona_id: $persona_id})
WHERE NOT EXISTS { MATCH (t)<-[:ABOUT]-(:Belief) }
  AND NOT EXISTS { MATCH (t)<-[:MENTIONS]-(:Episode) }
DETACH DELETE t
RETURN count(*) AS dropped
