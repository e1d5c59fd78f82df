"""``sonality key create|list|revoke`` on a real SQLite file: the token is printed once and
never stored, the list holds no secret, revocation is recorded, bad requests get their
exit codes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sonality.models import hash_secret, parse_token
from tests.conftest import ROOT
from tests.server.conftest import SONALITY, cli, store_env


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SONALITY, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_key_commands(tmp_path: Path) -> None:
    """create prints the token (its hash alone is stored), list shows ids and scopes only,
    revoke records the time; a global read key, an unknown persona and an unknown key id
    are refused with exit codes 2, 4 and 4."""
    db = tmp_path / "keys.db"
    env = store_env(f"sqlite:///{db}")
    cli(env, "persona", "create", "ada", "--name", "Ada", "--identity", "Ada.")
    made = cli(env, "key", "create", "--persona", "ada", "--scope", "read", "--name", "r")
    parsed = parse_token(made["token"])
    assert parsed is not None and parsed[0] == made["id"]
    listed = cli(env, "key", "list")
    assert [(k["id"], k["scope"], k["persona_ids"]) for k in listed] == [
        (made["id"], "read", ["ada"])
    ]
    assert "secret_hash" not in listed[0] and "token" not in listed[0]
    raw = db.read_bytes()
    assert parsed[1].encode() not in raw and hash_secret(parsed[1]).encode() in raw
    revoked = cli(env, "key", "revoke", made["id"])
    assert revoked["revoked_at"] is not None
    assert _run(env, "key", "create", "--scope", "read").returncode == 2
    assert _run(env, "key", "create", "--persona", "nobody").returncode == 4
    assert _run(env, "key", "revoke", "0123456789abcdef").returncode == 4
