"""Sonality's store on Neo4j 5.26: the only package that imports the driver.

``store.py`` assembles the aggregates (``personas``, ``episodes``, ``enrichment``,
``reflection``, ``runtime``), each running its units of work through the ``executor``;
``codec`` maps models to property maps and back, ``cypher`` names the query files,
``migrations`` is the ledger the shared runner drives. Importing this package alone loads
no driver.
"""
