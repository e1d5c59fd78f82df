"""REST under ``/v1`` against a real ``sonality serve`` on each store, driven with httpx:
every route answers with the facade's data, and every failure with ``{error, kind,
detail}`` and its status."""

from __future__ import annotations

import httpx
import pytest

from tests.server.conftest import Served

IDENTITY = "Ada is a careful engineer who weighs evidence before changing her mind."


@pytest.fixture(scope="module")
def ada(served: Served) -> str:
    """Persona ``ada`` with a few recorded exchanges of user ``sam`` (enriched inline)."""
    with served.client() as c:
        r = c.post("/v1/personas", json={"id": "ada", "name": "Ada", "core_identity": IDENTITY})
        assert r.status_code == 201, r.text
        r = c.post(
            "/v1/personas/ada/record",
            json={
                "user_id": "sam",
                "conversation_id": "c1",
                "message": "Nuclear power is the safest source per terawatt-hour.",
                "response": "That matches the mortality data I know.",
                "episode_id": "e1",
                "enrich": "inline",
            },
        )
        assert r.status_code == 200, r.text
    return "ada"


def test_health_and_readiness(served: Served) -> None:
    """/healthz answers without a key; /readyz reports the store and the schema ready and
    the background work within its lag bound, naming no persona."""
    with served.client("") as c:
        assert c.get("/healthz").json() == {"status": "ok"}
        ready = c.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert body["status"] == "ready", body
    assert body["checks"] == {"store": "ok", "schema": "ok", "lag": "ok"}
    assert set(body["lag"]) == {
        "bound_seconds",
        "episode_seconds",
        "turn_seconds",
        "personas_behind",
    }
    assert body["lag"]["bound_seconds"] == 60 and body["lag"]["personas_behind"] == 0


def test_personas_create_list_show(served: Served, ada: str) -> None:
    """A created persona is listed and shown with its first snapshot (the identity)."""
    with served.client() as c:
        listed = c.get("/v1/personas").json()
        shown = c.get("/v1/personas/ada").json()
    assert "ada" in [p["id"] for p in listed]
    assert shown["persona"]["name"] == "Ada"
    assert shown["snapshot"] == {**shown["snapshot"], "version": 1, "text": IDENTITY}


def test_record_is_idempotent_and_enriches(served: Served, ada: str) -> None:
    """Recording the same episode id again returns the stored episode (created false)
    and the episode is enriched by the scripted model."""
    body = {
        "user_id": "sam",
        "conversation_id": "c1",
        "message": "Nuclear power is the safest source per terawatt-hour.",
        "response": "That matches the mortality data I know.",
        "episode_id": "e1",
    }
    with served.client() as c:
        [again] = c.post("/v1/personas/ada/record", json=body).json()
    assert again["created"] is False
    assert again["episode"]["id"] == "e1"
    assert again["episode"]["enrichment_status"] == "enriched"


def test_record_messages_form_pairs_user_and_assistant(served: Served, ada: str) -> None:
    """A messages list becomes one exchange per user message and the reply after it,
    system messages skipped, episode ids ``<prefix>-<n>``."""
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "I am allergic to peanuts."},
        {"role": "assistant", "content": "Noted, no peanuts."},
        {"role": "user", "content": "What about cashews?"},
    ]
    with served.client() as c:
        r = c.post(
            "/v1/personas/ada/record",
            json={
                "user_id": "kim",
                "conversation_id": "k1",
                "messages": messages,
                "episode_id": "m",
            },
        )
    assert r.status_code == 200, r.text
    got = [
        (e["episode"]["id"], e["episode"]["user_message"], e["episode"]["agent_response"])
        for e in r.json()
    ]
    assert got == [
        ("m-1", "I am allergic to peanuts.", "Noted, no peanuts."),
        ("m-2", "What about cashews?", ""),
    ]


def test_context_search_and_reads(served: Served, ada: str) -> None:
    """context gives the prompt and its parts; search scores the user's episodes; the
    reads list beliefs (with evidence), facts, episodes and insights."""
    with served.client() as c:
        # kim's disclosure, enriched before the reads (not left to another test's background)
        drained = c.post("/v1/personas/ada/drain", json={"everywhere": True})
        assert drained.status_code == 200 and drained.json()["drained"], drained.text
        r = c.post(
            "/v1/personas/ada/record",
            json={
                "user_id": "kim",
                "conversation_id": "k2",
                "message": "I am allergic to peanuts.",
                "response": "Noted, no peanuts.",
                "episode_id": "kim-1",
                "enrich": "inline",
            },
        )
        assert r.status_code == 200 and r.json()[0]["episode"]["enrichment_status"] == "enriched"
        ctx = c.post(
            "/v1/personas/ada/context", json={"user_id": "sam", "message": "nuclear?"}
        ).json()
        found = c.post(
            "/v1/personas/ada/search", json={"user_id": "sam", "query": "nuclear safety"}
        ).json()
        beliefs = c.get("/v1/personas/ada/beliefs").json()
        evidence = c.get("/v1/personas/ada/beliefs/nuclear_power/evidence").json()
        facts = c.get("/v1/personas/ada/users/kim/facts").json()
        episodes = c.get("/v1/personas/ada/episodes", params={"user_id": "sam"}).json()
        insights = c.get("/v1/personas/ada/insights")
        enriched = c.post("/v1/personas/ada/enrich").json()
    assert IDENTITY in ctx["prompt"] and ctx["context"]["persona_id"] == "ada"
    assert [s["episode"]["id"] for s in found] == ["e1"] and 0 < found[0]["score"] <= 1
    assert [b["topic"] for b in beliefs] == ["nuclear_power"]
    assert [e["episode"]["id"] for e in evidence] == ["e1"]
    assert [f["text"] for f in facts] == ["The user is allergic to peanuts."]
    assert [e["id"] for e in episodes] == ["e1"]
    assert insights.status_code == 200 and insights.json() == []
    assert enriched["enriched"] == 0


def test_reflection_and_snapshots(served: Served, ada: str) -> None:
    """A dry run writes nothing; rollback adds a version with the old text; snapshots
    list newest first and show one version; reflections list the attempts."""
    with served.client() as c:
        dry = c.post("/v1/personas/ada/reflect", json={"dry_run": True})
        before = c.get("/v1/personas/ada/snapshots").json()
        rolled = c.post("/v1/personas/ada/snapshots/rollback", json={"to_version": 1}).json()
        after = c.get("/v1/personas/ada/snapshots").json()
        one = c.get(f"/v1/personas/ada/snapshots/{rolled['version']}").json()
        attempts = c.get("/v1/personas/ada/reflections")
    assert dry.status_code == 200 and dry.json()["outcome"] in ("skipped", "dry_run")
    assert rolled["version"] == before[0]["version"] + 1
    assert rolled["reason"] == "rollback:1" and rolled["text"] == IDENTITY
    assert after[0]["version"] == rolled["version"]
    assert one == rolled
    assert attempts.status_code == 200 and isinstance(attempts.json(), list)


def test_respond_drain_and_narrative(served: Served, ada: str) -> None:
    """respond answers with the Talker at once; after drain the conversation has a
    narrative written by the Thinker, and the store holds nothing of it pending."""
    with served.client() as c:
        reply = c.post(
            "/v1/personas/ada/respond",
            json={"user_id": "sam", "conversation_id": "r1", "message": "Hello there"},
        ).json()
        drained = c.post(
            "/v1/personas/ada/drain", json={"conversation_id": "r1", "max_seconds": 30}
        ).json()
        narrative = c.get("/v1/personas/ada/conversations/r1/narrative")
        none_yet = c.get("/v1/personas/ada/conversations/never/narrative")
    assert reply["text"] == "You said: Hello there" and reply["turn"] == 1
    assert drained == {"drained": True, "pending_episodes": 0, "pending_turns": 0}
    assert narrative.status_code == 200 and narrative.json()["turn"] == 1
    assert none_yet.status_code == 404 and none_yet.json()["kind"] == "not_found"


def test_keys_create_list_revoke(served: Served, ada: str) -> None:
    """An admin makes a key (token shown once, no hash in any answer), it works at once,
    and a revoked key is refused (401) once the verification cache expires."""
    with served.client() as c:
        made = c.post("/v1/keys", json={"scope": "read", "persona_ids": ["ada"]})
        assert made.status_code == 201, made.text
        key = made.json()
        listed = c.get("/v1/keys").json()
    assert key["token"].startswith(f"son_{key['id']}_")
    assert all("secret_hash" not in k and "token" not in k for k in listed)
    assert key["id"] in [k["id"] for k in listed]
    with served.client(key["token"]) as reader:
        assert reader.get("/v1/personas/ada/beliefs").status_code == 200
    with served.client() as c:
        revoked = c.delete(f"/v1/keys/{key['id']}").json()
    assert revoked["revoked_at"] is not None
    # a fresh token never seen by the cache is refused at once
    with served.client() as c:
        other = c.post("/v1/keys", json={"scope": "read", "persona_ids": ["ada"]}).json()
        c.delete(f"/v1/keys/{other['id']}")
    with served.client(other["token"]) as reader:
        refused = reader.get("/v1/personas/ada/beliefs")
    assert refused.status_code == 401 and refused.json()["kind"] == "unauthorized"


def test_metrics_in_prometheus_text(served: Served, ada: str) -> None:
    """/metrics counts requests by route and status, has latency histograms, model calls
    and episodes by status."""
    with served.client() as c:
        text = c.get("/metrics").text
    assert (
        'sonality_http_requests_total{method="POST",route="/v1/personas/{persona_id}/record"'
        in text
    )
    assert "sonality_http_request_duration_seconds_bucket{" in text
    assert 'sonality_llm_calls_total{component="enrichment"}' in text
    assert 'sonality_episodes{persona="ada",status="enriched"}' in text


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "kind"),
    [
        ("get", "/v1/personas/bad%20id/beliefs", None, 400, "validation"),
        ("post", "/v1/personas/ada/context", {"user_id": "sam", "message": ""}, 400, "validation"),
        ("get", "/v1/personas/nobody/beliefs", None, 404, "not_found"),
        ("get", "/v1/personas/ada/snapshots/999", None, 404, "not_found"),
        ("post", "/v1/personas", {"id": "ada", "name": "A", "core_identity": "x"}, 409, "conflict"),
        ("post", "/v1/personas/ada/context", {"user_id": "sam"}, 422, "request_invalid"),
        (
            "post",
            "/v1/personas/ada/context",
            {"user_id": "s", "message": "m", "x": 1},
            422,
            "request_invalid",
        ),
        ("get", "/v1/personas/ada/episodes?limit=0", None, 422, "request_invalid"),
        (
            "post",
            "/v1/personas/ada/respond",
            {"user_id": "sam", "conversation_id": "down", "message": "[model down]"},
            503,
            "model",
        ),
        ("get", "/v1/nothing-here", None, 404, "not_found"),
        ("delete", "/v1/personas/ada/beliefs", None, 405, "method_not_allowed"),
    ],
)
def test_error_kinds_have_their_status(
    served: Served, ada: str, method: str, path: str, body: object, status: int, kind: str
) -> None:
    """Each error kind answers with its status and a ``{error, kind, detail}`` body."""
    with served.client() as c:
        r = c.request(method, path, json=body)
    assert (r.status_code, r.json()["kind"]) == (status, kind), r.text
    assert set(r.json()) == {"error", "kind", "detail"} and r.json()["error"]


def test_malformed_json_is_422(served: Served, ada: str) -> None:
    """A body that is not JSON is a 422 with the error body, never a stack trace."""
    with served.client() as c:
        r = c.post(
            "/v1/personas/ada/context",
            content=b'{"user_id": "sam", "message": ',
            headers={"Content-Type": "application/json"},
        )
    assert r.status_code == 422 and r.json()["kind"] == "request_invalid"
    assert "Traceback" not in r.text


def test_oversized_bodies_are_413(served: Served, ada: str) -> None:
    """A body over the limit is refused with 413, declared or streamed (chunked)."""
    big = b'{"user_id": "sam", "message": "' + b"x" * 1_100_000 + b'"}'

    def chunks() -> object:
        for i in range(0, len(big), 65536):
            yield big[i : i + 65536]

    with served.client() as c:
        declared = c.post(
            "/v1/personas/ada/context", content=big, headers={"Content-Type": "application/json"}
        )
        streamed = c.post(
            "/v1/personas/ada/context",
            content=chunks(),
            headers={"Content-Type": "application/json"},
        )
    for r in (declared, streamed):
        assert r.status_code == 413 and r.json()["kind"] == "too_large", r.text


def test_no_key_is_401_and_a_wrong_scope_403(served: Served, ada: str) -> None:
    """No key, a malformed key and an unknown key are 401; a read key writing is 403."""
    with served.client() as c:
        reader = c.post("/v1/keys", json={"scope": "read", "persona_ids": ["ada"]}).json()
    unknown = "son_" + "0" * 16 + "_" + "1" * 64
    for token in ("", "not-a-key", unknown):
        with served.client(token) as c:
            r = c.get("/v1/personas/ada/beliefs")
        assert r.status_code == 401 and r.json()["kind"] == "unauthorized", token
    with served.client(reader["token"]) as c:
        r = c.post("/v1/personas/ada/reflect", json={"force": True})
    assert r.status_code == 403 and r.json()["kind"] == "forbidden"


def test_cors_is_off_by_default(served: Served, ada: str) -> None:
    """No CORS header is sent unless origins are configured."""
    with served.client() as c:
        r = c.get("/v1/personas", headers={"Origin": "https://evil.example"})
    assert not any(h.lower().startswith("access-control") for h in r.headers)


def test_transport_smoke(served: Served) -> None:
    """The server speaks plain HTTP/1.1 on loopback (the clients above rely on it)."""
    r = httpx.get(f"{served.url}/healthz")
    assert r.http_version == "HTTP/1.1"


def test_biography_routes(served: Served) -> None:
    """A persona created with a past lists it (without vectors); POST adds an entry once
    (the same words again return it), a bad importance is 400, DELETE removes one and a
    second DELETE is 404, as is the past of an unknown persona."""
    past = [{"text": "I grew up by the sea.", "importance": 8}]
    body = {"id": "quill", "name": "Quill", "core_identity": IDENTITY, "biography": past}
    with served.client() as c:
        assert c.post("/v1/personas", json=body).status_code == 201
        [first] = c.get("/v1/personas/quill/biography").json()
        assert (first["text"], first["importance"], first["source"]) == (
            "I grew up by the sea.",
            8,
            "authored",
        )
        assert "vector" not in first
        added = c.post(
            "/v1/personas/quill/biography",
            json={"text": "My first job was in a bakery.", "source": "statement"},
        )
        assert added.status_code == 201, added.text
        again = c.post(
            "/v1/personas/quill/biography", json={"text": "my first job was in a BAKERY"}
        )
        assert again.json()["id"] == added.json()["id"]
        bad = c.post("/v1/personas/quill/biography", json={"text": "x", "importance": 11})
        assert bad.status_code == 400 and bad.json()["kind"] == "validation"
        assert len(c.get("/v1/personas/quill/biography").json()) == 2
        gone = c.delete(f"/v1/personas/quill/biography/{first['id']}")
        assert gone.status_code == 200 and gone.json()["id"] == first["id"]
        assert c.delete(f"/v1/personas/quill/biography/{first['id']}").status_code == 404
        assert c.get("/v1/personas/nobody/biography").status_code == 404
        assert [e["text"] for e in c.get("/v1/personas/quill/biography").json()] == [
            "My first job was in a bakery."
        ]
