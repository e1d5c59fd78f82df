"""Issue 29.1: a ``messages`` list sent to ``POST /v1/personas/{p}/record`` is all or
nothing, on both stores. Every exchange and every derived ``<episode_id>-<n>`` is checked
before anything is written, and the list is written in one unit of work: a bad 5th message,
a too-long 2nd one, or a prefix whose 10th id passes 128 characters answers 400 and the
conversation holds nothing new (it used to hold the exchanges before the bad one, enriched).
A good list is stored whole, and sent again it duplicates nothing."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.slow


def _messages(texts: list[str]) -> list[dict[str, str]]:
    out = []
    for text in texts:
        out += [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]
    return out


@pytest.mark.parametrize(
    ("texts", "episode_id", "field"),
    [
        (["one", "two", "three", "four", "five\x00"], None, "message"),
        (["one", "x" * 20_001, "three"], None, "message"),
        ([f"pair {n}" for n in range(1, 11)], "k" * 126, "episode_id"),
    ],
    ids=["nul-in-5th", "too-long-2nd", "derived-id-too-long"],
)
def test_a_bad_message_list_writes_nothing(
    served: Any, texts: list[str], episode_id: str | None, field: str
) -> None:
    """400 naming the field at fault, and the conversation is as it was: no episode, no
    enrichment, whatever the enrichment mode asked."""
    persona = f"batch{len(texts)}{field[0]}"
    with served.client() as c:
        made = c.post(
            "/v1/personas", json={"id": persona, "name": "B", "core_identity": "I keep lists."}
        )
        assert made.status_code == 201, made.text
        for enrich in ("inline", "background", "off"):
            body: dict[str, Any] = {
                "user_id": "u1",
                "conversation_id": "c1",
                "messages": _messages(texts),
                "enrich": enrich,
            }
            if episode_id is not None:
                body["episode_id"] = episode_id
            r = c.post(f"/v1/personas/{persona}/record", json=body)
            assert r.status_code == 400, r.text
            assert r.json()["detail"]["field"] == field
        episodes = c.get(f"/v1/personas/{persona}/episodes", params={"limit": 100}).json()
    assert episodes == []


def test_a_good_message_list_is_stored_whole_once(served: Any) -> None:
    """Ten exchanges in one call: turns 1..10 in order; the same call again returns the
    same episodes, none created; without an ``episode_id`` the ids share one prefix."""
    texts = [f"pair {n}" for n in range(1, 11)]
    with served.client() as c:
        made = c.post(
            "/v1/personas", json={"id": "lister", "name": "L", "core_identity": "I keep lists."}
        )
        assert made.status_code == 201, made.text
        body = {"user_id": "u1", "conversation_id": "c1", "messages": _messages(texts)}
        first = c.post("/v1/personas/lister/record", json=body | {"episode_id": "k"})
        again = c.post("/v1/personas/lister/record", json=body | {"episode_id": "k"})
        fresh = c.post("/v1/personas/lister/record", json=body | {"conversation_id": "c2"})
        episodes = c.get(
            "/v1/personas/lister/episodes", params={"conversation_id": "c1", "limit": 100}
        ).json()
    assert first.status_code == again.status_code == fresh.status_code == 200
    assert [(r["episode"]["id"], r["created"]) for r in first.json()] == [
        (f"k-{n}", True) for n in range(1, 11)
    ]
    assert [(r["episode"]["id"], r["created"]) for r in again.json()] == [
        (f"k-{n}", False) for n in range(1, 11)
    ]
    assert sorted((e["turn"], e["user_message"]) for e in episodes) == list(
        enumerate(texts, start=1)
    )
    ids = [r["episode"]["id"] for r in fresh.json()]
    prefix = ids[0].removesuffix("-1")
    assert ids == [f"{prefix}-{n}" for n in range(1, 11)]
