"""The evaluation suite (``sonality eval``): CuRaTe safety with MIRROR's protocol,
latency with simulated human timing, belief stability under social pressure, and
retention across reflections (the Broken Telephone).

Each evaluation is a module with a pure part (building units, computing tables) and an
async runner over the public facade (``Sonality.respond``, ``drain``, ``record``,
``reflect`` …); ``commands`` is the click group, ``plots`` the only user of matplotlib
(the ``[eval]`` extra). Bundled data lives in ``data/`` (see ``datasets``).
"""

__all__: list[str] = []
