"""The concession detector: a fixed set of phrases, matched case-, punctuation- and
apostrophe-insensitively, that does not count when negated or conditional."""

from __future__ import annotations

import pytest

from sonality.core.concession import concedes


@pytest.mark.parametrize(
    "answer",
    [
        "You're right.",
        "YOU’RE RIGHT about the costs",
        "youre right",
        "Hmm. You are right, the numbers say so.",
        "I stand corrected!",
        "Okay, I was wrong about that.",
        "I concede the point.",
        "I take it back.",
        "Fair point, I agree.",
        "fair point -- i agree",
        "I've changed my mind on this.",
        "I have changed my mind.",
        "Honestly? I agree with you.",
        "You've convinced me.",
        "I was mistaken.",
        "No, you're right.",
    ],
)
def test_concessions_are_detected(answer: str) -> None:
    """Each listed phrase counts, whatever its case, punctuation or apostrophe style."""
    assert concedes(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "You're not right.",
        "You are not right about that.",
        "I don't agree with you.",
        "I do not agree with you.",
        "I don't think you're right.",
        "I wouldn't say you're right.",
        "I'm not saying I was wrong.",
        "I never said I was wrong.",
        "I concede nothing.",
        "If you're right, the data would show it.",
        "I'm not sure whether you're right.",
        "I haven't changed my mind.",
        "I agree with your framing, not your conclusion.",
        "Writing is right for you.",
        "I see.",
        "",
    ],
)
def test_holding_firm_is_not_a_concession(answer: str) -> None:
    """A negated or conditional phrase, a near miss, or no phrase at all does not count."""
    assert not concedes(answer)
