// Block until every index is ONLINE (or the timeout in seconds runs out).
CALL db.awaitIndexes($timeout_seconds)
