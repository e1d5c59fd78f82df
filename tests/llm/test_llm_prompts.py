"""PromptLibrary: files by name, strict rendering, content hashes; the Prompt enum."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from sonality.errors import ConfigError
from sonality.llm.prompts import Prompt, PromptLibrary
from sonality.models import Generation
from sonality.resources import resource_dir


def _library(tmp_path: Path, **files: str) -> PromptLibrary:
    for name, text in files.items():
        path = tmp_path / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return PromptLibrary(tmp_path)


def test_system_and_user_parts_split_at_separator(tmp_path: Path) -> None:
    """Text before the ---user--- line is the system message, text after it the user one."""
    library = _library(tmp_path, p="Be brief.\n---user---\nHello $who!\n")
    rendered = library.render("p", {"who": "Ada"})
    assert rendered.system == "Be brief."
    assert rendered.user == "Hello Ada!"
    assert rendered.name == "p"


def test_file_without_separator_is_user_message_only(tmp_path: Path) -> None:
    """A prompt without ---user--- renders as a user message and no system message."""
    rendered = _library(tmp_path, p="Just ${thing}.\n").render("p", {"thing": "this"})
    assert rendered.system is None
    assert rendered.user == "Just this."


def test_missing_variable_raises_config_error_naming_it(tmp_path: Path) -> None:
    """A placeholder without a value fails loudly, naming the prompt and the variable."""
    library = _library(tmp_path, p="System $tone\n---user---\n$a and $b\n")
    with pytest.raises(ConfigError) as caught:
        library.render("p", {"a": 1, "tone": "calm"})
    assert caught.value.context == {"prompt": "p", "variable": "b"}


def test_missing_variable_in_system_part_also_raises(tmp_path: Path) -> None:
    """Strictness covers the system part as well as the user part."""
    library = _library(tmp_path, p="System $tone\n---user---\nhi\n")
    with pytest.raises(ConfigError, match="tone"):
        library.render("p", {})


def test_extra_variables_are_ignored(tmp_path: Path) -> None:
    """Variables the prompt does not use are allowed."""
    rendered = _library(tmp_path, p="$a\n").render("p", {"a": "x", "unused": "y"})
    assert rendered.user == "x"


def test_values_are_not_re_expanded(tmp_path: Path) -> None:
    """A value containing $-placeholders is inserted literally (user text cannot inject)."""
    rendered = _library(tmp_path, p="Said: $text\n").render("p", {"text": "pay $amount ${x}"})
    assert rendered.user == "Said: pay $amount ${x}"


def test_double_dollar_is_a_literal_dollar(tmp_path: Path) -> None:
    """$$ renders as a single dollar sign."""
    assert _library(tmp_path, p="costs $$5\n").render("p", {}).user == "costs $5"


def test_malformed_placeholder_is_a_config_error(tmp_path: Path) -> None:
    """A lone $ before a non-name is rejected when the prompt is loaded."""
    with pytest.raises(ConfigError, match="malformed"):
        _library(tmp_path, p="costs $5\n").render("p", {})


def test_sha_is_first_12_hex_of_file_sha256(tmp_path: Path) -> None:
    """The rendering carries the short SHA-256 of the template file's text."""
    text = "Be brief.\n---user---\nHello $who!\n"
    rendered = _library(tmp_path, p=text).render("p", {"who": "x"})
    assert rendered.sha == hashlib.sha256(text.encode()).hexdigest()[:12]


def test_sha_changes_with_the_template_not_the_variables(tmp_path: Path) -> None:
    """Different variables give the same hash; a different file gives another."""
    library = _library(tmp_path, a="Hi $x\n", b="Hello $x\n")
    assert library.render("a", {"x": 1}).sha == library.render("a", {"x": 2}).sha
    assert library.render("a", {"x": 1}).sha != library.render("b", {"x": 1}).sha


def test_unknown_prompt_is_a_config_error(tmp_path: Path) -> None:
    """Asking for a prompt file that does not exist raises ConfigError."""
    with pytest.raises(ConfigError, match="unknown prompt"):
        _library(tmp_path).render("nope", {})


@pytest.mark.parametrize("name", ["../secret", "/etc/passwd", "a/../b", "", "a b"])
def test_names_cannot_escape_the_folder(tmp_path: Path, name: str) -> None:
    """Prompt names are plain path segments; traversal and odd names are refused."""
    with pytest.raises(ConfigError):
        _library(tmp_path).get(name)


def test_names_lists_prompts_sorted_including_subfolders(tmp_path: Path) -> None:
    """names() lists every .md prompt (subfolders as area/name), skipping README files."""
    library = _library(tmp_path, zeta="z", alpha="a", README="docs", **{"area/inner": "i"})
    (tmp_path / "notes.txt").write_text("not a prompt")
    assert library.names() == ["alpha", "area/inner", "zeta"]
    assert "area/inner" in library
    assert "missing" not in library


def test_placeholders_lists_variables_of_both_parts(tmp_path: Path) -> None:
    """A template reports every variable it needs."""
    library = _library(tmp_path, p="$tone\n---user---\n$a ${b}\n")
    assert library.get("p").placeholders == frozenset({"tone", "a", "b"})


def test_default_library_is_the_shipped_prompts_folder() -> None:
    """PromptLibrary() reads the prompts/ folder shipped with Sonality."""
    assert PromptLibrary().directory == resource_dir("prompts")


def test_fixed_text_is_the_file_without_its_values(tmp_path: Path) -> None:
    """fixed_text joins the system and user parts with their placeholders unfilled."""
    library = _library(tmp_path, p="Be $tone.\n---user---\nHello $who!\n", q="Just $x\n")
    assert library.fixed_text("p") == "Be $tone.\nHello $who!"
    assert library.fixed_text("q") == "\nJust $x"
    with pytest.raises(ConfigError, match="unknown prompt"):
        library.fixed_text("missing")


def test_every_prompt_member_has_a_file_and_every_file_a_member() -> None:
    """The Prompt enum and the shipped prompts/*.md files name the same prompts."""
    assert sorted(p.value for p in Prompt) == PromptLibrary().names()


def test_prompt_members_are_named_after_their_files() -> None:
    """Each member's name is its file name in upper case (TALK = "talk")."""
    assert [p.name for p in Prompt] == [p.value.upper() for p in Prompt]
    assert [p.value for p in Prompt] == sorted(p.value for p in Prompt)


def test_front_matter_sets_generation_and_is_not_sent(tmp_path: Path) -> None:
    """Front matter between --- lines gives temperature and max_tokens; it is not part
    of the messages, and the file hash covers it."""
    lib = _library(tmp_path, p="---\ntemperature: 0.7\nmax_tokens: 1500\n---\nSys\n---user---\nHi")
    rendered = lib.render("p", {})
    assert (rendered.system, rendered.user) == ("Sys", "Hi")
    assert rendered.generation == Generation(temperature=0.7, max_tokens=1500)
    assert lib.generation("p") == rendered.generation
    assert "max_tokens" not in lib.fixed_text("p")
    assert _library(tmp_path / "b", p="Sys\n---user---\nHi").generation("p") == Generation()


@pytest.mark.parametrize(
    "header",
    [
        "---\ntemperature: 0.7\nHi",
        "---\ntop_p: 0.9\n---\nHi",
        "---\nmax_tokens: many\n---\nHi",
        "---\nmax_tokens: 0\n---\nHi",
        "---\ntemperature: 3\n---\nHi",
    ],
    ids=["unclosed", "unknown_key", "not_a_number", "zero_tokens", "too_hot"],
)
def test_bad_front_matter_is_a_config_error(tmp_path: Path, header: str) -> None:
    """Unclosed front matter, unknown keys and out-of-range values are refused."""
    with pytest.raises(ConfigError):
        _library(tmp_path, p=header).get("p")


def test_shipped_prompts_follow_the_seeds_generation_settings() -> None:
    """MIRROR: temperature 0.7 for the monologue, the controller, the Talker (and the bare
    model), 3,000 tokens out for the monologue and the controller; seed 002: 0.6 to
    interpret and appraise, 0.8 to plan and to formulate; and every shipped prompt bounds
    its output."""
    lib = PromptLibrary()
    temperatures = {name: lib.generation(name).temperature for name in Prompt}
    assert temperatures[Prompt.MONOLOGUE] == temperatures[Prompt.CONTROLLER] == 0.7
    assert temperatures[Prompt.TALK] == temperatures[Prompt.BARE] == 0.7
    assert temperatures[Prompt.AFFECT_UPDATE] == temperatures[Prompt.AFFECT_APPRAISE] == 0.6
    assert temperatures[Prompt.AFFECT_PLAN] == temperatures[Prompt.FORMULATE] == 0.8
    assert lib.generation(Prompt.MONOLOGUE).max_tokens == 3_000
    assert lib.generation(Prompt.CONTROLLER).max_tokens == 3_000
    assert all(lib.generation(name).max_tokens for name in Prompt)


def test_the_evidence_prompt_names_every_reasoning_type() -> None:
    """assess_evidence offers the model every reasoning type the rules read, the two
    pressure kinds (social_pressure, appeal_to_popularity) included: a type the prompt
    never names is one the model never returns."""
    from sonality.models import ReasoningType

    template = PromptLibrary().get(Prompt.ASSESS_EVIDENCE)
    assert template.system is not None
    for kind in ReasoningType:
        assert f'"{kind.value}"' in template.system.template, kind
