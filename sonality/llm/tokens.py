"""Counting tokens for budgets (context windows, narrative and monologue limits).

Tokens are counted with ``tiktoken``'s ``cl100k_base`` encoding, read from the copy that
litellm's wheel ships (``litellm/litellm_core_utils/tokenizers/``), found on disk without
importing litellm (which takes seconds): nothing is downloaded, and read-only commands
stay fast. Loading the encoding takes a few tenths of a second once per process, so a
deployment without a model (``mind.parts.assemble``) counts with :func:`approximate_tokens`
instead, one token per four characters, where budgets need only an estimate. If the
encoding cannot be loaded, the count falls back to that approximation too. Budgets only
need a close estimate: every model family is counted with the same encoding.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from sonality.observability import get_logger

__all__ = ["DEFAULT_TOKENIZER_MODEL", "approximate_tokens", "count_tokens", "encoding"]

DEFAULT_TOKENIZER_MODEL = "gpt-4o"
"""Kept for callers that name it: every model is counted with ``cl100k_base``."""

_CL100K_FILE = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"
"""tiktoken's cache name of ``cl100k_base.tiktoken`` (the SHA-1 of its URL)."""
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

log = get_logger("sonality.llm")


def approximate_tokens(text: str) -> int:
    """One token per four characters, rounded up (0 for empty text)."""
    return (len(text) + 3) // 4


def _shipped_file() -> Path | None:
    spec = importlib.util.find_spec("litellm")  # locates the package, does not import it
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = Path(root) / "litellm_core_utils" / "tokenizers" / _CL100K_FILE
        if path.is_file():
            return path
    return None


@cache
def encoding() -> Any:
    """The ``cl100k_base`` encoding loaded from the shipped file, or None when it or
    tiktoken is missing (then :func:`count_tokens` approximates)."""
    path = _shipped_file()
    if path is None:
        log.warning("token_encoding_missing", fallback="4 characters per token")
        return None
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    ranks = load_tiktoken_bpe(str(path), expected_hash=_CL100K_SHA256)
    return tiktoken.Encoding(
        name="cl100k_base",
        pat_str=_CL100K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=_CL100K_SPECIAL,
    )


_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


def count_tokens(text: str, model: str | None = None) -> int:
    """How many tokens ``text`` takes (``model`` is accepted for callers that name one;
    every model is counted with ``cl100k_base``, see the module docstring).

    Counts are remembered for the last :data:`MEMO_ENTRIES` texts of at least
    :data:`MEMO_MIN_CHARS` characters, keyed by a 128-bit digest (the texts themselves
    are not kept): the Thinker and the context builder count the same narrative,
    monologue entries and episodes turn after turn, and encoding is about a millisecond
    per few thousand characters. A long text not seen whole before is counted by its
    lines (see :func:`_by_lines`), each long line remembered on its own: a prompt is new
    every turn, but it is made of blocks (the identity, the narrative, the monologue's
    entries) that were counted before."""
    del model
    if not text:
        return 0
    enc = encoding()
    if enc is None:
        return approximate_tokens(text)
    if len(text) < MEMO_MIN_CHARS:
        return len(enc.encode(text, disallowed_special=()))
    if len(text) >= SPLIT_MIN_CHARS and "\n" in text:
        return _remembered(text, lambda whole: _by_lines(enc, whole))
    return _remembered(text, lambda whole: len(enc.encode(whole, disallowed_special=())))


MEMO_ENTRIES = 4096
"""Token counts remembered (about 100 bytes each)."""
MEMO_MIN_CHARS = 256
"""Shorter texts are encoded every time (as cheap as the digest)."""
SPLIT_MIN_CHARS = 1024
"""Shorter texts are encoded whole: splitting would save little."""
_memo: OrderedDict[bytes, int] = OrderedDict()
_memo_lock = threading.Lock()

_LINE_END = re.compile(r"\n(?=\S)")
"""A newline followed by a character that is not white space. No piece of
``cl100k_base``'s pre-tokenizer spans the position after it: a piece that holds a newline
either ends there or goes on with white space only; no piece looks behind; and the one
that looks ahead (white space not followed by other text) is tried after the one that
takes white space up to its last newline. So a text's tokens are those of its parts cut
there, one part after another (``tests/llm/test_token_memo.py`` checks it on awkward
text)."""


def _by_lines(enc: Any, text: str) -> int:
    """``text``'s count as the sum of its parts' cut at :data:`_LINE_END`: runs of short
    lines are encoded together up to and with the next long line, and such a run is
    remembered as one text; which lines make a run depends on the lines alone, so a
    block comes back as the same run in another prompt."""

    def encoded(part: str) -> int:
        return len(enc.encode(part, disallowed_special=()))

    total = 0
    run = line = 0  # where the run of lines and the line being read start
    for newline in _LINE_END.finditer(text):
        end = newline.end()
        if end - line >= MEMO_MIN_CHARS:
            total += _remembered(text[run:end], encoded)
            run = end
        line = end
    rest = text[run:]
    return total + (_remembered(rest, encoded) if len(rest) >= MEMO_MIN_CHARS else encoded(rest))


def _remembered(text: str, count: Callable[[str], int]) -> int:
    """``count(text)``, or the count remembered for ``text``."""
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _memo_lock:
        known = _memo.get(key)
        if known is not None:
            _memo.move_to_end(key)
            return known
    counted = count(text)
    with _memo_lock:
        _memo[key] = counted
        if len(_memo) > MEMO_ENTRIES:
            _memo.popitem(last=False)
    return counted
