"""A port of Neo4j Browser 5.24's GraSS parser (``parseGrass`` in its bundle), so the tests
read the style sheet exactly as the Browser does: JSON first, else a character scan where
quotes hide braces, each block splits on ``;`` and each declaration must split on ``:``
into exactly two parts (a declaration that does not is silently dropped), and there are
no comments (their text would become part of a selector)."""

from __future__ import annotations

import json


def parse_grass(text: str) -> dict[str, dict[str, str]]:
    try:
        parsed = json.loads(text)
    except ValueError:
        pass
    else:
        return {str(k): {str(p): str(v) for p, v in dict(d).items()} for k, d in parsed.items()}
    in_quote = in_block = nested = False
    selector = body = ""
    blocks: dict[str, str] = {}
    for ch in text:
        structural = True
        if ch == "{":
            if in_quote:
                structural = False
            elif in_block:
                nested = True
            else:
                in_block = True
        elif ch == "}":
            if in_quote:
                structural = False
            elif nested:
                nested = False
            else:
                in_block = False
                blocks[selector] = body
                selector = body = ""
        elif ch in "'\"":
            in_quote = not in_quote
        else:
            structural = False
        if not structural:
            if in_block:
                body += ch
            elif not ch.isspace():
                selector += ch
    rules: dict[str, dict[str, str]] = {}
    for name, block in blocks.items():
        props: dict[str, str] = {}
        for declaration in block.split(";"):
            parts = declaration.split(":")
            if len(parts) == 2:
                props[parts[0].strip()] = parts[1].strip()
        rules[name] = props
    return rules


def style_for(rules: dict[str, dict[str, str]], tag: str, classes: set[str]) -> dict[str, str]:
    """The Browser's cascade: every rule whose classes the item has, in file order."""
    merged: dict[str, str] = {}
    for selector, props in rules.items():
        rule_tag, *rule_classes = selector.split(".")
        if rule_tag == tag and set(rule_classes) <= classes:
            merged |= props
    return merged
