// Delete one biography entry of the persona, returning it.
MATCH (b:BiographyEntry {persona_id: $persona_id, id: $entry_id})
WITH b, b {.*} AS entry
DETACH DELETE b
RETURN entry
