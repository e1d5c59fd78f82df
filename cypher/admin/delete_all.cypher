// Remove every data node in batches (run as an auto-commit query). The schema and the
// Migration records stay.
MATCH (n)
WHERE NOT n:Migration
CALL (n) {
  DETACH DELETE n
} IN TRANSACTIONS OF 1000 ROWS
