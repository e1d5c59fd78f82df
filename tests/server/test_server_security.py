"""Tenancy and secrets against a real server: a key sees only its personas (another
persona answers exactly like an unknown one), injection payloads in ids are refused as
bad input, and neither an API key nor the Neo4j password shows up in a log or an error
body."""

from __future__ import annotations

import random
from urllib.parse import quote

import pytest

from tests.server.conftest import NEO4J_PASSWORD, Served

SECRET_IDENTITY = "Bea keeps a secret: the launch code is 0000."


@pytest.fixture(scope="module")
def tenants(served: Served) -> dict[str, str]:
    """Personas ``alpha`` and ``beta`` with data, and a write key for ``alpha`` only."""
    with served.client() as c:
        for pid, identity in (("alpha", "Alpha is plain."), ("beta", SECRET_IDENTITY)):
            r = c.post("/v1/personas", json={"id": pid, "name": pid, "core_identity": identity})
            assert r.status_code == 201, r.text
            r = c.post(
                f"/v1/personas/{pid}/record",
                json={
                    "user_id": "u1",
                    "conversation_id": "c1",
                    "episode_id": "e1",
                    "message": f"I am allergic to peanuts, says {pid}'s user",
                    "response": "Noted.",
                    "enrich": "inline",
                },
            )
            assert r.status_code == 200, r.text
        key = c.post("/v1/keys", json={"scope": "write", "persona_ids": ["alpha"]}).json()
    return {"alpha": key["token"]}


def _probes(persona: str) -> list[tuple[str, str, dict[str, object] | None]]:
    p = quote(persona)
    return [
        ("get", f"/v1/personas/{p}", None),
        ("get", f"/v1/personas/{p}/beliefs", None),
        ("get", f"/v1/personas/{p}/beliefs/nuclear_power/evidence", None),
        ("get", f"/v1/personas/{p}/users/u1/facts", None),
        ("get", f"/v1/personas/{p}/episodes", None),
        ("get", f"/v1/personas/{p}/insights", None),
        ("get", f"/v1/personas/{p}/reflections", None),
        ("get", f"/v1/personas/{p}/snapshots", None),
        ("get", f"/v1/personas/{p}/snapshots/1", None),
        ("get", f"/v1/personas/{p}/conversations/c1/narrative", None),
        ("post", f"/v1/personas/{p}/context", {"user_id": "u1", "message": "hi"}),
        ("post", f"/v1/personas/{p}/search", {"user_id": "u1", "query": "peanuts"}),
        (
            "post",
            f"/v1/personas/{p}/record",
            {"user_id": "u1", "conversation_id": "c9", "message": "x", "response": "y"},
        ),
        (
            "post",
            f"/v1/personas/{p}/respond",
            {"user_id": "u1", "conversation_id": "c9", "message": "x"},
        ),
        ("post", f"/v1/personas/{p}/reflect", {"dry_run": True}),
        ("post", f"/v1/personas/{p}/drain", {}),
        ("post", f"/v1/personas/{p}/enrich", None),
        ("post", f"/v1/personas/{p}/snapshots/rollback", {"to_version": 1}),
        ("post", f"/v1/personas/{p}/users/u1/facts", {"episode_id": "e1", "text": "likes tea"}),
        ("post", f"/v1/personas/{p}/facts/f1/retract", None),
        ("patch", f"/v1/personas/{p}/facts/f1", {"text": "likes tea"}),
    ]


def test_cross_tenant_probes_learn_nothing(served: Served, tenants: dict[str, str]) -> None:
    """Over 200 randomized probes of persona ``beta`` with ``alpha``'s key: every one is
    404 with the body an unknown persona gets, nothing of beta's data in any answer, and
    beta's data unchanged afterwards."""
    rng = random.Random(13)
    with served.client() as admin:
        before = admin.get("/v1/personas/beta/episodes").json()
        facts = admin.get("/v1/personas/beta/users/u1/facts").json()
    with served.client(tenants["alpha"]) as c:
        for _ in range(220):
            method, path, body = rng.choice(_probes("beta"))
            ghost = f"ghost{rng.randrange(10**6)}"
            hidden = c.request(method, path, json=body)
            unknown = c.request(method, path.replace("/beta", f"/{ghost}", 1), json=body)
            assert hidden.status_code == 404, (path, hidden.text)
            assert unknown.status_code == 404, (path, unknown.text)
            assert hidden.json()["kind"] == unknown.json()["kind"] == "not_found"
            assert hidden.text.replace("beta", ghost) == unknown.text
            assert "launch code" not in hidden.text and "peanut" not in hidden.text
        listed = c.get("/v1/personas").json()
        models = c.get("/v1/models").json()
    assert [p["id"] for p in listed] == ["alpha"]
    assert [m["id"] for m in models["data"]] == ["sonality/alpha"]
    with served.client() as admin:
        assert admin.get("/v1/personas/beta/episodes").json() == before
        assert admin.get("/v1/personas/beta/users/u1/facts").json() == facts


def test_a_bound_key_cannot_manage_keys_or_others(served: Served, tenants: dict[str, str]) -> None:
    """A write key cannot list or make keys (403) nor create personas; it reaches its
    own persona."""
    with served.client(tenants["alpha"]) as c:
        assert c.get("/v1/keys").status_code == 403
        assert c.post("/v1/keys", json={"scope": "admin"}).status_code == 403
        made = c.post("/v1/personas", json={"id": "gamma", "name": "g", "core_identity": "g"})
        assert made.status_code == 404  # gamma is not among its personas
        assert c.get("/v1/personas/alpha/episodes").status_code == 200
        assert c.get("/metrics").status_code == 403


@pytest.mark.parametrize(
    "payload",
    [
        "a' OR '1'='1",
        "x}) MATCH (n) DETACH DELETE n RETURN 1 --",
        "1; DROP TABLE personas; --",
        "alpha\x00",
        "$where",
        "<img src=x onerror=alert(1)>",
        "..%2F..%2Fetc",
        "a" * 300,
    ],
)
def test_injection_payload_ids_are_400(
    served: Served, tenants: dict[str, str], payload: str
) -> None:
    """An id carrying an injection payload is a validation error (400), for an admin and
    for a bound key alike, in a path and in a body, and writes nothing."""
    p = quote(payload, safe="")
    with served.client() as admin:
        before = admin.get("/v1/personas").json()
        in_path = admin.get(f"/v1/personas/{p}/beliefs")
        in_body = admin.post(
            "/v1/personas/alpha/record",
            json={"user_id": payload, "conversation_id": "c1", "message": "m", "response": "r"},
        )
        created = admin.post(
            "/v1/personas", json={"id": payload, "name": "x", "core_identity": "x"}
        )
        after = admin.get("/v1/personas").json()
    with served.client(tenants["alpha"]) as bound:
        bound_path = bound.get(f"/v1/personas/{p}/episodes")
    for r in (in_path, in_body, created, bound_path):
        assert r.status_code == 400 and r.json()["kind"] == "validation", r.text
    assert before == after


def test_secrets_never_in_logs_or_error_bodies(served: Served, tenants: dict[str, str]) -> None:
    """After all the traffic above (including failures), the server's log holds neither
    an API key's token nor its secret part, nor the Neo4j password; error bodies hold
    neither either."""
    with served.client(tenants["alpha"]) as c:
        bodies = [
            c.get("/v1/personas/beta").text,
            c.get("/v1/keys").text,
            c.post("/v1/personas/alpha/context", content=b"{oops").text,
        ]
    with served.client("son_" + "f" * 16 + "_" + "e" * 64) as c:
        bodies.append(c.get("/v1/personas").text)
    logs = served.logs()
    assert '"event": "http_request"' in logs  # the log is there, and was written
    for token in (served.admin, tenants["alpha"]):
        secret = token.rsplit("_", 1)[1]
        for text in (logs, *bodies):
            assert token not in text and secret not in text
    for text in (logs, *bodies):
        assert NEO4J_PASSWORD not in text
