"""``sonality demo``: the main job on whatever store is configured (by default the
embedded SQLite file). Creates the sample persona, records the bundled conversation
(idempotently: running it twice stores nothing new), and prints what the persona now
knows."""

from __future__ import annotations

import click

from sonality.cli.shell import CliState, run

__all__ = ["demo"]

SAMPLE_PERSONA = "ada"
SAMPLE_USER = "sam"


@click.command()
@click.option("--persona", "persona_id", default=SAMPLE_PERSONA, show_default=True)
@click.pass_obj
@run
async def demo(state: CliState, persona_id: str) -> None:
    """Record the bundled sample conversation and show context, beliefs and facts."""
    import json

    from sonality.errors import PersonaNotFound
    from sonality.wiring import quiet, resource_dir

    samples = resource_dir("samples")
    rows = [
        json.loads(line)
        for line in (samples / "conversation.jsonl").read_text("utf-8").splitlines()
        if line.strip()
    ]
    settings = state.settings
    # the demo's own output tells the story: per-event INFO lines stay back (-v shows them)
    with quiet(state.verbosity <= 0):
        async with state.app() as app:
            try:
                await app.persona(persona_id)
            except PersonaNotFound:
                await app.create_persona(
                    persona_id,
                    name="Ada",
                    core_identity=(samples / "ada.md").read_text("utf-8").strip(),
                )
                click.echo(f"created persona {persona_id!r}")
            new = 0
            for row in rows:
                recorded = await app.record(
                    persona_id,
                    user_id=row["user_id"],
                    conversation_id=row["conversation_id"],
                    message=row["message"],
                    response=row["response"],
                    episode_id=row["id"],
                    enrich=False,
                )
                new += recorded.created
            report = await app.enrich_pending(persona_id)
            context = await app.context(
                persona_id, user_id=SAMPLE_USER, message="Any snack ideas for a mountain hike?"
            )
            beliefs = await app.beliefs(persona_id)
            facts = await app.facts(persona_id, user_id=SAMPLE_USER)
            counts = await app.store.count_episodes(persona_id)
    click.echo(f"store: {settings.store}")
    click.echo(
        f"recorded {new} new exchanges of the sample conversation "
        f"({len(rows) - new} were already stored)"
    )
    click.echo(
        f"episodes: {counts['enriched']} enriched, {counts['pending']} pending, "
        f"{counts['failed']} failed"
    )
    if report.stopped_by == "no_model":
        click.echo(
            "\nEnrichment is pending: no model is configured, so the episodes are stored "
            "safely but no beliefs, facts or insights have been extracted yet.\n"
            "Configure one and run `sonality enrich`, e.g.\n"
            "  SONALITY_MODEL=openai/gpt-4o-mini SONALITY_LLM_API_KEY=sk-... sonality enrich\n"
            "  SONALITY_MODEL=openai/llama3.1 SONALITY_LLM_API_BASE=http://localhost:11434/v1 "
            "sonality enrich"
        )
    elif report.stopped_by:
        click.echo(f"\nEnrichment stopped early: {report.stopped_by}")
    click.echo("\n=== context for: 'Any snack ideas for a mountain hike?' ===")
    click.echo(context.as_prompt())
    click.echo("\n=== beliefs ===")
    for b in beliefs:
        click.echo(f"{b.topic:<28} {b.position:+.3f}  confidence {b.confidence:.3f}")
    if not beliefs:
        click.echo("(none yet)")
    click.echo(f"\n=== facts about {SAMPLE_USER} ===")
    for f in facts:
        click.echo(f"[{f.kind.value}, severity {f.severity}] {f.text}")
    if not facts:
        click.echo("(none yet)")
