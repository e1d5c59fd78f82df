// Users of the persona whose active constraints add up to at least $min_chars characters,
// $line_chars more for each (its line in a context): what `doctor` then counts in tokens.
// The longest first, to a limit.
MATCH (f:UserFact {persona_id: $persona_id, kind: 'constraint'})
WHERE NOT f.retracted
WITH f.user_id AS user_id, count(f) AS facts, sum(size(f.text)) AS chars
WHERE chars + facts * $line_chars >= $min_chars
RETURN user_id, facts, chars
ORDER BY chars DESC, user_id
LIMIT $limit
