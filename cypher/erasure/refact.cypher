// Facts that lose a source but keep another: re-pointed ($kept), and facts left with no
// source removed ($gone).
CALL () {
  UNWIND $kept AS row
  MATCH (f:UserFact {persona_id: $persona_id, id: row.id})
  SET f.episode_id = row.episode_id, f.also_from = row.also_from
}
CALL () {
  UNWIND $gone AS fact_id
  MATCH (f:UserFact {persona_id: $persona_id, id: fact_id})
  DETACH DELETE f
}
RETURN size($kept) + size($gone) AS changed
