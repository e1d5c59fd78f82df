// Connectivity probe: proves the database answers queries.
RETURN 1 AS ok
