"""API keys: the token format, its hash, and the check of a presented token.

A token is ``son_<id>_<secret>``: a 16-hex-digit public id (how the store finds the key)
and a 64-hex-digit secret (256 random bits). The store keeps the id and the SHA-256 of
the secret; a salt or a slow hash adds nothing for a secret of that strength. The
secret is shown once, when the key is made.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

__all__ = ["TOKEN_PATTERN", "hash_secret", "mint", "parse_token", "secret_matches"]

TOKEN_PATTERN = re.compile(r"^son_([0-9a-f]{16})_([0-9a-f]{64})$")


def hash_secret(secret: str) -> str:
    """The stored form of a secret: its SHA-256, as hex."""
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def mint() -> tuple[str, str, str]:
    """A new ``(key_id, secret, token)``."""
    key_id = secrets.token_hex(8)
    secret = secrets.token_hex(32)
    return key_id, secret, f"son_{key_id}_{secret}"


def parse_token(token: str) -> tuple[str, str] | None:
    """``(key_id, secret)`` of a well-formed token, else None."""
    match = TOKEN_PATTERN.match(token)
    return (match.group(1), match.group(2)) if match else None


def secret_matches(secret: str, stored_hash: str) -> bool:
    """Whether ``secret`` hashes to ``stored_hash`` (compared in constant time)."""
    return hmac.compare_digest(hash_secret(secret), stored_hash)
