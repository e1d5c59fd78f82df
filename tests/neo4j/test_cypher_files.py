"""The Cypher catalogue: every ``Query`` has its file and every file its ``Query``; one
statement per file; parameters only. Also how migration files are found and split.
Needs no server."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from sonality.errors import SchemaError
from sonality.resources import resource_dir
from sonality.storage.neo4j.cypher import Query, load, split_statements
from sonality.storage.neo4j.migrations import discover as discover_migrations

CYPHER = resource_dir("cypher")
FILES = sorted(CYPHER.rglob("*.cypher"))
FORMAT_PLACEHOLDER = re.compile(r"\{\s*\d*\s*\}|\{[A-Za-z_][A-Za-z0-9_]*\}|%\(?[a-z_]*\)?[sd]\b")


def _name(path: Path) -> str:
    return path.relative_to(CYPHER).with_suffix("").as_posix()


def test_every_query_has_a_file() -> None:
    """Each Query member names an existing cypher/<area>/<name>.cypher file."""
    missing = [q.name for q in Query if not (CYPHER / f"{q.value}.cypher").is_file()]
    assert missing == []


def test_every_file_has_a_query() -> None:
    """No Cypher file is orphaned: each one is reachable through a Query member."""
    known = {q.value for q in Query}
    assert [_name(p) for p in FILES if _name(p) not in known] == []


def test_query_values_are_area_slash_name() -> None:
    """Query values are two-level paths and members are named AREA_NAME after them."""
    for q in Query:
        area, _, name = q.value.partition("/")
        assert re.fullmatch(r"[a-z]+", area), q
        assert re.fullmatch(r"[a-z][a-z0-9_]*", name), q
        assert q.name == f"{area}_{name}".upper(), q


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_one_statement_per_file(path: Path) -> None:
    """A file holds exactly one statement and no top-level ``;`` at all."""
    text = path.read_text(encoding="utf-8")
    # A top-level ``;`` anywhere (even trailing) would make the split differ from the text.
    assert split_statements(text) == [text.strip()]


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_parameters_not_formatting(path: Path) -> None:
    """Values arrive as ``$params``, never through Python formatting placeholders."""
    code = "\n".join(
        line.split("//", 1)[0] for line in path.read_text(encoding="utf-8").splitlines()
    )
    code = re.sub(r"'[^']*'", "''", code)
    assert not FORMAT_PLACEHOLDER.search(code), FORMAT_PLACEHOLDER.search(code)


def test_load_returns_the_file_text() -> None:
    """``load`` returns the stripped file text, the same object on repeated calls."""
    text = load(Query.PERSONA_GET)
    assert text == (CYPHER / "persona" / "get.cypher").read_text(encoding="utf-8").strip()
    assert load(Query.PERSONA_GET) is text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("RETURN 1", ["RETURN 1"]),
        ("RETURN 1;\nRETURN 2;\n", ["RETURN 1", "RETURN 2"]),
        ("RETURN 'a;b';", ["RETURN 'a;b'"]),
        ('RETURN "a;\\";b"', ['RETURN "a;\\";b"']),
        ("RETURN `we;ird` ; RETURN 2", ["RETURN `we;ird`", "RETURN 2"]),
        ("// one; two\nRETURN 1", ["// one; two\nRETURN 1"]),
        ("/* a; b */ RETURN 1;\n// trailing only\n", ["/* a; b */ RETURN 1"]),
        ("  \n// nothing\n;\n", []),
    ],
)
def test_split_statements(text: str, expected: list[str]) -> None:
    """Only top-level ``;`` split; strings, quoted names and comments keep theirs."""
    assert split_statements(text) == expected


def test_shipped_migrations_are_discovered_in_order() -> None:
    """migrations/neo4j/ starts with V0001-V0003 (later features add more), split into their
    statements, checksummed as shipped; versions strictly increase (ranges are handed out per
    line of work, e.g. V0020-V0029, so there may be gaps)."""
    found = discover_migrations(resource_dir("migrations") / "neo4j")
    versions = [m.version for m in found]
    assert versions[:3] == [1, 2, 3] and versions == sorted(set(versions))
    assert [(m.version, m.name) for m in found[:3]] == [
        (1, "V0001__constraints"),
        (2, "V0002__indexes"),
        (3, "V0003__episode_embedding_vector_index"),
    ]
    statements = [split_statements(m.text) for m in found]
    assert [len(s) for s in statements[:3]] == [11, 10, 1]
    # schema statements, and data backfills (V0010 sets the insight status of old episodes);
    # V0036 drops the unscoped vector index before recreating it scoped (2026.x only)
    kinds = ("CREATE", "SET", "DROP INDEX")
    assert all(any(k in s for k in kinds) for each in statements for s in each)
    folder = resource_dir("migrations") / "neo4j"
    text = (folder / "V0003__episode_embedding_vector_index.cypher").read_text()
    assert found[2].checksum == hashlib.sha256(text.encode()).hexdigest()
    assert "$embedding_dimensions" in statements[2][0]


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("V1__short.cypher", "RETURN 1", "V0001__description"),
        ("V0001__Bad-Name.cypher", "RETURN 1", "V0001__description"),
        ("V0001__ok.cypher", "// only a comment\n", "no statement"),
        ("V0001__ok.cypher", "CREATE INDEX x FOR (n:L) ON (n.p) OPTIONS {$other}", "whitelisted"),
    ],
)
def test_malformed_migration_folders_are_refused(
    tmp_path: Path, name: str, text: str, problem: str
) -> None:
    """Badly named files, empty files and non-whitelisted parameters raise SchemaError."""
    (tmp_path / name).write_text(text)
    with pytest.raises(SchemaError, match=problem):
        discover_migrations(tmp_path)


def test_duplicate_migration_versions_are_refused(tmp_path: Path) -> None:
    """Two files with one version number raise SchemaError."""
    (tmp_path / "V0001__a.cypher").write_text("RETURN 1")
    (tmp_path / "V0001__b.cypher").write_text("RETURN 2")
    with pytest.raises(SchemaError, match="share a version"):
        discover_migrations(tmp_path)


def test_an_include_line_is_replaced_by_the_named_query() -> None:
    """episode/append_backlog composes two queries: its text holds each whole, inside a
    subquery, and no INCLUDE line is left; a query without INCLUDE loads verbatim."""
    composed = load(Query.EPISODE_APPEND_BACKLOG)
    assert re.search(r"^\s*INCLUDE ", composed, re.MULTILINE) is None
    for part in (Query.EPISODE_APPEND, Query.ENRICHMENT_BACKLOG):
        assert load(part) in composed
    plain = (CYPHER / f"{Query.EPISODE_APPEND.value}.cypher").read_text(encoding="utf-8")
    assert load(Query.EPISODE_APPEND) == plain.strip()
    assert split_statements(composed) == [composed]
