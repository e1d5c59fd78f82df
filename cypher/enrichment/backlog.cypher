// What an enrichment pass reads before it asks the model, in one statement: the persona,
// its oldest pending episodes (up to $limit, by seq: the order enrichment follows) and,
// when $count, how many are pending in all (an index range of the pending ones, never a
// scan of the persona's episodes). No row: no such persona.
MATCH (p:Persona {id: $persona_id})
CALL (p) {
  MATCH (e:Episode {persona_id: $persona_id, enrichment_status: 'pending'})
  WITH e
  ORDER BY e.seq
  LIMIT $limit
  RETURN collect(e {.*, embedding: null}) AS episodes
}
RETURN p {.*} AS persona, episodes,
       CASE WHEN $count
         THEN COUNT { MATCH (x:Episode {persona_id: $persona_id, enrichment_status: 'pending'}) }
       END AS pending
