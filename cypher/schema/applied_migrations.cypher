// The migrations recorded as applied, in version order.
MATCH (m:Migration)
RETURN m.version AS version,
       m.description AS description,
       m.checksum AS checksum,
       m.applied_at AS applied_at
ORDER BY m.version
