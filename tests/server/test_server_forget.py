"""Forgetting, correcting and moving over REST against a real server on each store:
forget a user, delete an exchange, retract and correct a fact, export and import a
persona, delete it; the audit records stay and hold no user text."""

from __future__ import annotations

import pytest

from tests.server.conftest import Served


@pytest.fixture(scope="module")
def zoe(served: Served) -> str:
    """Persona ``zoe`` with two users; ``uma`` told it about peanuts."""
    with served.client() as c:
        r = c.post("/v1/personas", json={"id": "zoe", "name": "Zoe", "core_identity": "Zoe."})
        assert r.status_code == 201, r.text
        for user, n in (("uma", 1), ("uma", 2), ("vic", 1)):
            r = c.post(
                "/v1/personas/zoe/record",
                json={
                    "user_id": user,
                    "conversation_id": f"{user}-c",
                    "episode_id": f"{user}{n}",
                    "message": f"I am allergic to peanuts and like nuclear power ({n}).",
                    "response": "Noted.",
                    "enrich": "inline",
                },
            )
            assert r.status_code == 200, r.text
    return "zoe"


def test_fact_retract_and_correct(served: Served, zoe: str) -> None:
    """A corrected fact reads back with its new text; a retracted one leaves the list."""
    with served.client() as c:
        [fact] = c.get("/v1/personas/zoe/users/vic/facts").json()
        fixed = c.patch(
            f"/v1/personas/zoe/facts/{fact['id']}",
            json={"text": "The user is allergic to tree nuts.", "severity": 4},
        )
        assert fixed.status_code == 200, fixed.text
        assert [f["text"] for f in c.get("/v1/personas/zoe/users/vic/facts").json()] == [
            "The user is allergic to tree nuts."
        ]
        retracted = c.post(f"/v1/personas/zoe/facts/{fact['id']}/retract")
        assert retracted.status_code == 200, retracted.text
        assert c.get("/v1/personas/zoe/users/vic/facts").json() == []
        missing = c.post("/v1/personas/zoe/facts/nope/retract")
    assert missing.status_code == 404 and missing.json()["kind"] == "not_found"


def test_fact_add_over_rest(served: Served, zoe: str) -> None:
    """POST users/{user}/facts adds a fact backed by the user's episode, once for the same
    words; another user's episode is 404, bad input 400 or 422, a read key 403, and none
    of them writes."""
    fact = {"episode_id": "uma1", "text": "The user is vegan.", "kind": "preference"}
    with served.client() as c:
        before = c.get("/v1/personas/zoe/users/uma/facts").json()
        added = c.post("/v1/personas/zoe/users/uma/facts", json=fact)
        assert added.status_code == 200, added.text
        assert (added.json()["user_id"], added.json()["severity"]) == ("uma", 1)
        again = c.post(
            "/v1/personas/zoe/users/uma/facts", json={**fact, "text": "the user is VEGAN"}
        )
        assert again.json() == added.json()
        after = c.get("/v1/personas/zoe/users/uma/facts").json()
        assert after == [*before, added.json()]
        for bad, status in (
            ({"episode_id": "vic1"}, 404),
            ({"text": ""}, 400),
            ({"severity": 7}, 400),
            ({"kind": "rumour"}, 422),
            ({"colour": "red"}, 422),
        ):
            r = c.post("/v1/personas/zoe/users/uma/facts", json={**fact, **bad})
            assert r.status_code == status, (bad, r.text)
        reader = c.post("/v1/keys", json={"scope": "read", "persona_ids": ["zoe"]}).json()
    with served.client(reader["token"]) as c:
        r = c.post("/v1/personas/zoe/users/uma/facts", json={**fact, "text": "likes tea"})
        assert r.status_code == 403 and r.json()["kind"] == "forbidden"
        assert c.get("/v1/personas/zoe/users/uma/facts").json() == after


def test_export_then_import_round_trips(served: Served, zoe: str) -> None:
    """An export imported again is unchanged (idempotent), byte-identical on re-export."""
    with served.client() as c:
        first = c.get("/v1/personas/zoe/export")
        assert first.status_code == 200 and first.headers["content-type"].startswith(
            "application/x-ndjson"
        )
        imported = c.post(
            "/v1/import", content=first.content, headers={"Content-Type": "application/x-ndjson"}
        )
        again = c.get("/v1/personas/zoe/export")
    assert imported.status_code == 200, imported.text
    assert [(i["persona_id"], i["status"]) for i in imported.json()] == [("zoe", "unchanged")]
    assert again.content == first.content


def test_delete_episode_and_forget_user(served: Served, zoe: str) -> None:
    """Deleting an exchange and forgetting a user remove their episodes and facts; the
    erasure records list both and hold neither the ids nor the text."""
    with served.client() as c:
        deleted = c.delete("/v1/personas/zoe/episodes/uma1")
        forgot = c.delete("/v1/personas/zoe/users/uma")
        episodes = c.get("/v1/personas/zoe/episodes", params={"user_id": "uma"}).json()
        facts = c.get("/v1/personas/zoe/users/uma/facts").json()
        audit = c.get("/v1/personas/zoe/erasures")
        again = c.delete("/v1/personas/zoe/users/uma")
    assert deleted.status_code == 200 and deleted.json()["episodes"] == 1
    assert forgot.status_code == 200 and forgot.json()["episodes"] == 1
    assert episodes == [] and facts == []
    assert [e["kind"] for e in audit.json()] == ["episode", "user"]
    assert "uma" not in audit.text and "peanut" not in audit.text
    assert again.status_code == 404


def test_forgetting_needs_an_admin_key(served: Served, zoe: str) -> None:
    """A write key for the persona may correct facts but not erase (403)."""
    with served.client() as c:
        key = c.post("/v1/keys", json={"scope": "write", "persona_ids": ["zoe"]}).json()
    with served.client(key["token"]) as w:
        assert w.delete("/v1/personas/zoe/users/vic").status_code == 403
        assert w.delete("/v1/personas/zoe").status_code == 403
        assert w.get("/v1/personas/zoe/export").status_code == 403
        assert w.post("/v1/import", content=b"").status_code == 403


def test_delete_persona(served: Served, zoe: str) -> None:
    """Deleting the persona removes it (404 afterwards); its audit records stay; the keys
    naming it are revoked."""
    with served.client() as c:
        key = c.post("/v1/keys", json={"scope": "read", "persona_ids": ["zoe"]}).json()
        gone = c.delete("/v1/personas/zoe")
        revoked = next(k for k in c.get("/v1/keys").json() if k["id"] == key["id"])
        after = c.get("/v1/personas/zoe")
        audit = c.get("/v1/personas/zoe/erasures").json()
    assert gone.status_code == 200 and gone.json()["kind"] == "persona"
    assert after.status_code == 404
    assert [e["kind"] for e in audit][-1] == "persona"
    assert revoked["revoked_at"] is not None
