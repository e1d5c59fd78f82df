"""Sonality's embedded store on one SQLite file.

``store.py`` assembles the aggregates (``personas``, ``episodes``, ``enrichment``,
``reflection``, ``runtime``), each running its units of work through the ``executor``
(one worker thread owning the connection); ``codec`` maps models to rows and back,
``vectors`` is the exact similarity search, ``migrations`` the ledger the shared runner
drives.
"""
