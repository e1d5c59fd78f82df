"""``sonality chat`` in a real pseudo-terminal: answers, slash commands, a clean exit, and
a clear error without a model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pexpect

from tests.conftest import EMBEDDING_DIMENSIONS, ROOT
from tests.runtime import script

CLI = [sys.executable, "-c", "import sys; from sonality.cli import main; sys.exit(main())"]


def _env(db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SONALITY_")}
    return {
        **env,
        "PYTHONPATH": str(ROOT),
        "SONALITY_STORE": f"sqlite:///{db}",
        "SONALITY_EMBEDDING_DIMENSIONS": str(EMBEDDING_DIMENSIONS),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def _create_persona(env: dict[str, str]) -> None:
    subprocess.run(
        [*CLI, "persona", "create", "ada", "--name", "Ada", "--identity", "I weigh evidence."],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
    )


def test_chat_in_a_terminal(tmp_path: Path) -> None:
    """Lines typed at ``you>`` are answered as ``ada>``; /narrative, /facts, /beliefs,
    /why, /reflect and /help work; arrow up recalls the last line (readline history, kept
    in the state directory); /quit finishes the background thinking and exits 0."""
    env = {**_env(tmp_path / "chat.db"), "XDG_STATE_HOME": str(tmp_path / "state")}
    _create_persona(env)
    child = pexpect.spawn(
        CLI[0],
        [
            *CLI[1:],
            "chat",
            "--persona",
            "ada",
            "--user",
            "u1",
            "--conversation",
            "c1",
            "--llm",
            "tests.runtime.chat_model:factory",
        ],
        env=env,
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=90,
    )
    try:
        child.expect("Talking with Ada")
        for i in range(1, 7):
            child.expect_exact("you> ")
            child.sendline(script.message(i))
            child.expect(rf"ada> Reply to turn {i} \(narrative v\d\)\.")
        child.expect_exact("you> ")
        child.sendline("/narrative")
        child.expect(r"\[narrative v6, after turn 6\]")
        child.expect("I thought about turn 6")
        child.expect_exact("you> ")
        child.sendline("/facts")
        child.expect("severity 5] The user is allergic to peanuts.")
        child.expect_exact("you> ")
        child.sendline("/beliefs")
        child.expect(r"remote_work\s+[+-]\d\.\d{3}  confidence")
        child.expect_exact("you> ")
        child.sendline("/why Remote Work")
        child.expect(r"remote_work: [+-]\d\.\d{3}, confidence")
        child.expect(r"(for|against|no stance)\s+[+-]\d\.\d{4}  c1#1")
        child.expect_exact("you> ")
        child.sendline("/why tea")
        child.expect("no belief about tea yet")
        child.expect_exact("you> ")
        child.sendline("/reflect")
        child.expect(r"reflection (committed|rejected|failed|skipped)")
        child.expect_exact("you> ")
        child.sendline("/help")
        child.expect("/why TOPIC")
        child.expect_exact("you> ")
        child.send("\x1b[A\r")  # arrow up: the last line again, from readline's history
        child.expect("/why TOPIC")
        child.expect_exact("you> ")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before
    history = (tmp_path / "state" / "sonality" / "chat_history").read_text("utf-8")
    assert history.splitlines()[-2:] == ["/help", "/quit"]


def test_chat_without_a_model_says_so_and_exits_8(tmp_path: Path) -> None:
    """With neither SONALITY_MODEL nor --llm, chat prints one clear line and exits 8."""
    env = _env(tmp_path / "chat.db")
    _create_persona(env)
    out = subprocess.run(
        [*CLI, "chat", "--persona", "ada", "--user", "u1"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        input="hello\n",
    )
    assert out.returncode == 8
    assert "chat needs a model" in out.stderr and "SONALITY_MODEL" in out.stderr
