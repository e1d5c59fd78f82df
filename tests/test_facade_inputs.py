"""The facade's id checks refuse a missing required id (None), and take None only where
the id is optional."""

from __future__ import annotations

import pytest

from sonality.errors import ValidationError
from sonality.mind.inputs import check_ids


def test_a_required_id_may_not_be_none() -> None:
    with pytest.raises(ValidationError) as caught:
        check_ids(persona_id="ada", user_id=None)
    assert caught.value.context.get("field") == "user_id"


def test_an_optional_id_may_be_none_but_not_malformed() -> None:
    check_ids(episode_id=None, optional=True)
    with pytest.raises(ValidationError):
        check_ids(episode_id="has space\n", optional=True)
