"""Deterministic replies for the OpenAI-compatible fake: a JSON value synthesised from a
JSON schema (the subset pydantic emits), and a short plain-text answer."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["plain_reply", "synthesize"]

_WORDS = (
    "steady",
    "careful",
    "bright",
    "quiet",
    "honest",
    "patient",
    "curious",
    "plain",
    "gentle",
    "clear",
    "warm",
    "sober",
)
_MAX_DEPTH = 12


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def plain_reply(text: str) -> str:
    h = _digest(text)
    words = [_WORDS[(h >> (4 * i)) % len(_WORDS)] for i in range(3)]
    return f"Here is a {words[0]}, {words[1]} and {words[2]} answer (ref {h % 10_000:04d})."


# schema synthesis ---------------------------------------------------------------------------


def synthesize(schema: Mapping[str, Any], *, seed: str = "") -> Any:
    """A value that validates against JSON ``schema`` (the subset pydantic emits:
    ``$ref``/``$defs``, ``anyOf``/``oneOf``/``allOf``, ``enum``, ``const``, types,
    properties, items, string length, numeric bounds). Deterministic for a given ``seed``.

    Every property is filled, null is avoided where another type is allowed, arrays take
    their minimum length, strings are non-blank, numbers sit inside their bounds."""
    return _Synth(schema, seed).value(schema, "value", 0)


class _Synth:
    def __init__(self, root: Mapping[str, Any], seed: str) -> None:
        self._root = root
        self._seed = seed

    def _resolve(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        seen = 0
        while "$ref" in node and seen < _MAX_DEPTH:
            ref = str(node["$ref"])
            if not ref.startswith("#/"):
                raise ValueError(f"only local $ref is supported, got {ref!r}")
            target: Any = self._root
            for part in ref[2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            seen += 1
        return node

    def value(self, node: Mapping[str, Any] | bool, name: str, depth: int) -> Any:
        if isinstance(node, bool) or depth > _MAX_DEPTH:
            return self._string({}, name)
        node = self._resolve(node)
        if "const" in node:
            return node["const"]
        if node.get("enum"):
            options = [v for v in node["enum"] if v is not None] or list(node["enum"])
            return options[0]
        for key in ("anyOf", "oneOf"):
            if node.get(key):
                options = [self._resolve(o) for o in node[key]]
                chosen = next((o for o in options if o.get("type") != "null"), options[0])
                merged = {k: v for k, v in node.items() if k != key}
                return self.value({**merged, **chosen}, name, depth + 1)
        if node.get("allOf"):
            merged = {k: v for k, v in node.items() if k != "allOf"}
            for part in node["allOf"]:
                merged.update(self._resolve(part))
            return self.value(merged, name, depth + 1)
        kind = node.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None:
            if "properties" in node:
                kind = "object"
            elif "items" in node:
                kind = "array"
            else:
                kind = "string"
        if kind == "object":
            props = node.get("properties", {})
            return {key: self.value(sub, key, depth + 1) for key, sub in props.items()}
        if kind == "array":
            items = node.get("items", {})
            count = int(node.get("minItems", 0))
            return [self.value(items, f"{name}_{i}", depth + 1) for i in range(count)]
        if kind == "string":
            return self._string(node, name)
        if kind == "integer":
            return int(self._number(node, integer=True))
        if kind == "number":
            return self._number(node, integer=False)
        if kind == "boolean":
            return False
        return None

    def _string(self, node: Mapping[str, Any], name: str) -> str:
        if node.get("format") == "date-time":
            return "2026-01-01T12:00:00Z"
        if node.get("format") == "date":
            return "2026-01-01"
        h = _digest(f"{self._seed}|{name}")
        text = f"{name.replace('_', ' ')}: {_WORDS[h % len(_WORDS)]} {_WORDS[(h >> 8) % 12]}"
        low = int(node.get("minLength", 1))
        high = node.get("maxLength")
        while len(text) < low:
            text += " and more"
        if high is not None:
            text = text[: int(high)] or "x"
        return text

    @staticmethod
    def _number(node: Mapping[str, Any], *, integer: bool) -> float:
        low = node.get("minimum")
        high = node.get("maximum")
        xlow = node.get("exclusiveMinimum")
        xhigh = node.get("exclusiveMaximum")
        step = 1 if integer else 0.01
        if xlow is not None:
            low = xlow + step if low is None else max(low, xlow + step)
        if xhigh is not None:
            high = xhigh - step if high is None else min(high, xhigh - step)
        if low is not None and high is not None:
            middle = (low + high) / 2
            value = math.floor(middle) if integer else round(middle, 4)
        elif low is not None:
            value = low if low > 0 else max(low, 1 if integer else 0.5)
        elif high is not None:
            value = high if high < 0 else min(high, 1 if integer else 0.5)
        else:
            value = 1 if integer else 0.5
        if integer:
            value = math.ceil(value) if low is not None and value < low else value
        return float(value)
