"""``python -m sonality``: the same as the ``sonality`` command."""

from sonality.cli import main

main()
