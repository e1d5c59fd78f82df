"""Persistence: the two adapters of the ``Store`` port and what they share.

::

    storage/
      checks.py       the rules both stores enforce (idempotency, compare-and-swap, scope)
      shapes.py       row shapes both store the same way (an episode's flattened evidence)
      migrations.py   the migration runner: discover, checksum, compare, apply in order
      neo4j/          the Neo4j store: store, executor, codec, cypher, migrations and one
                      module per aggregate (personas, episodes, enrichment, reflection,
                      runtime, keys); the only package that imports the driver
      sqlite/         the SQLite store: the same modules, plus vectors (similarity search)

Importing this package loads no database driver.
"""
