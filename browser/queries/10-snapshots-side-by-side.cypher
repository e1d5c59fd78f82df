// 10 Snapshot versions side by side
// Parameters: persona. Newest first; each version next to the one it replaced.
MATCH (:Persona {id: $persona})-[:CURRENT]->(:Snapshot)-[:PREVIOUS*0..]->(s:Snapshot)
OPTIONAL MATCH (s)-[:PREVIOUS]->(older:Snapshot)
RETURN s.version AS version,
       s.reason AS reason,
       s.created_at AS created_at,
       size(s.text) AS chars,
       CASE WHEN older IS NULL THEN null
            ELSE round(toFloat(size(s.text)) / size(older.text), 2) END AS length_vs_previous,
       s.text AS text,
       older.text AS previous_text
ORDER BY version DESC
