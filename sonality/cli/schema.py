"""The schema commands: ``migrate`` (apply or check pending migrations) and ``doctor``
(store, schema, pending enrichment and model settings at a glance)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from sonality import __version__
from sonality.cli.shell import CliState, Unsuccessful, emit, json_option, run

if TYPE_CHECKING:
    from sonality import Settings
    from sonality.models import OldestPending

__all__ = ["doctor", "migrate"]

COMPACT_CONSTRAINT_TOKENS = 4_000
"""The tokens of constraint lines past which a context shows them compactly
(``sonality.mind.context.COMPACT_CONSTRAINT_TOKENS``; ``tests/cli`` keeps the two equal)."""


@click.command()
@click.option("--check", is_flag=True, help="Apply nothing; exit 1 when migrations are pending.")
@json_option
@click.pass_obj
@run
async def migrate(state: CliState, check: bool, as_json: bool) -> None:
    """Apply pending schema migrations to the configured store."""
    async with state.store() as store:
        status = await store.schema_status()
        if check:
            emit(
                {"backend": status.backend, "pending": list(status.pending)},
                as_json,
                lambda: click.echo(
                    f"{len(status.pending)} pending: {', '.join(status.pending)}"
                    if status.pending
                    else "schema is current"
                ),
            )
            if status.pending:
                raise Unsuccessful
            return
        applied = await store.migrate()
        index = (await store.schema_status()).vector_index
    result: dict[str, Any] = {"backend": status.backend, "applied": applied}
    if index is not None:
        result["vector_index"] = {**index.model_dump(), "matches_setting": index.matches}

    def text() -> None:
        click.echo("\n".join(f"applied {name}" for name in applied) or "nothing to apply")
        if "vector_index" in result:
            click.echo(f"vector index: {_vector_index_line(result['vector_index'])}")

    emit(result, as_json, text)


@click.command()
@json_option
@click.option("--call-model", is_flag=True, help="Also send one tiny request to the model.")
@click.pass_obj
@run
async def doctor(state: CliState, as_json: bool, call_model: bool) -> None:
    """Check the store, the schema, pending enrichment, episodes without an embedding,
    oversized constraints and the model settings.

    Lists, per persona, episodes by enrichment status, the failed ones (with their last
    error; `sonality enrich --retry-failed` retries them), insight parts still pending or
    failed, the lag: the age of the oldest pending episode and of the oldest unthought
    Thinker turn, BEHIND past SONALITY_LAG_DEGRADED_SECONDS (a lag alone does not fail the
    check), and a reflection lease when one is held (its holder and expiry: a worker killed
    while reflecting leaves it until then), and the users whose active constraints pass
    4,000 tokens (every context shows them in one compact line: a warning, not a
    failure). --call-model sends one tiny request and says why it failed. A store
    setting that cannot work (a malformed URL) exits 3, as every command does.
    """
    from datetime import UTC, datetime

    from sonality.errors import ConfigError, SonalityError
    from sonality.wiring import Reads, redact_url

    settings = state.settings
    report: dict[str, Any] = {
        "version": __version__,
        "store": {"backend": settings.store_backend, "url": redact_url(settings.store)},
        "model": {"configured": bool(settings.model), "name": settings.model},
        "embedding": {
            "model": settings.embedding_model or "built-in hashed embedder",
            "dimensions": settings.embedding_dimensions,
        },
    }
    try:
        async with state.store(create=False) as store:
            await store.ping()
            status = await store.schema_status()
            report["store"].update(reachable=True)
            report["schema"] = {"current": status.current, "pending": list(status.pending)}
            if status.vector_index is not None:
                index = status.vector_index
                report["schema"]["vector_index"] = {
                    **index.model_dump(),
                    "matches_setting": index.matches,
                }
            if status.current:
                pending: dict[str, dict[str, int]] = {}
                insights: dict[str, dict[str, int]] = {}
                failed: dict[str, list[dict[str, Any]]] = {}
                leases: dict[str, dict[str, Any]] = {}
                constraints: dict[str, list[dict[str, Any]]] = {}
                now = datetime.now(UTC)
                personas = await store.list_personas()
                report["lag"] = _lag_report(
                    await store.oldest_pending([p.id for p in personas]),
                    settings.lag_degraded_seconds,
                )
                for persona in personas:
                    lease = await store.get_lease(persona.id)
                    if lease is not None:
                        leases[persona.id] = {
                            "owner": lease.owner,
                            "expires_at": lease.expires_at.isoformat(),
                            "expires_in_seconds": round((lease.expires_at - now).total_seconds()),
                        }
                    counts = await store.count_episodes(persona.id)
                    counts["unembedded"] = await store.count_unembedded(persona.id)
                    pending[persona.id] = counts
                    insights[persona.id] = await store.count_insight_retries(persona.id)
                    heavy = await Reads(store).oversized_constraints(persona.id)
                    if heavy:
                        constraints[persona.id] = [
                            {"user_id": h.user_id, "constraints": h.facts, "tokens": h.tokens}
                            for h in heavy
                        ]
                    if pending[persona.id]["failed"]:
                        failed[persona.id] = [
                            {
                                "id": e.id,
                                "attempts": e.enrichment_attempts,
                                "error": e.enrichment_error,
                            }
                            for e in await store.list_failed_episodes(persona.id, limit=10)
                        ]
                report["episodes"] = pending
                report["insights"] = insights
                report["failed_episodes"] = failed
                report["leases"] = leases
                report["oversized_constraints"] = {
                    "bound_tokens": COMPACT_CONSTRAINT_TOKENS,  # mind.context's cap
                    "personas": constraints,
                }
    except ConfigError:
        raise  # not an unreachable store: a setting to fix (exit 3)
    except SonalityError as exc:
        report["store"].update(reachable=False, error=str(exc))
    healthy = bool(report["store"]["reachable"]) and bool(report.get("schema", {}).get("current"))
    if call_model and settings.model:
        error = await _ping_model(settings)
        report["model"]["reachable"] = error is None
        if error is not None:
            report["model"]["error"] = error
        healthy &= error is None

    def text() -> None:
        store_info = report["store"]
        click.echo(f"sonality {__version__}")
        click.echo(
            f"store      {store_info['backend']} {store_info['url']} "
            f"{'reachable' if store_info.get('reachable') else 'UNREACHABLE'}"
            + (f" ({store_info['error']})" if "error" in store_info else "")
        )
        if "schema" in report:
            schema = report["schema"]
            click.echo(
                "schema     "
                + ("current" if schema["current"] else f"PENDING: {', '.join(schema['pending'])}")
            )
            if "vector_index" in schema:
                click.echo(f"vector     {_vector_index_line(schema['vector_index'])}")
        for pid, counts in report.get("episodes", {}).items():
            insight = report["insights"][pid]
            click.echo(
                f"persona    {pid}: {counts['enriched']} enriched, {counts['pending']} pending, "
                f"{counts['failed']} failed, {counts['unembedded']} without embedding; "
                f"insights {insight['pending']} pending, {insight['failed']} failed"
            )
            lag = report["lag"]["personas"].get(pid)
            if lag is not None and (lag["episode_seconds"] or lag["turn_seconds"]):
                click.echo(
                    f"  lag      oldest pending episode {lag['episode_seconds']:.0f} s, "
                    f"oldest unthought turn {lag['turn_seconds']:.0f} s"
                    + (
                        f"  BEHIND (over {report['lag']['bound_seconds']:g} s)"
                        if lag["behind"]
                        else ""
                    )
                )
            for episode in report["failed_episodes"].get(pid, []):
                click.echo(
                    f"  failed   {episode['id']} after {episode['attempts']} attempts: "
                    f"{episode['error']}"
                )
            if counts["failed"] or insight["failed"]:
                click.echo(f"  retry    sonality enrich --persona {pid} --retry-failed")
            if pid in report["leases"]:
                click.echo(f"  lease    {_lease_line(report['leases'][pid])}")
            for user in report["oversized_constraints"]["personas"].get(pid, []):
                click.echo(
                    f"  WARNING  user {user['user_id']}: {user['constraints']} active constraints "
                    f"take {user['tokens']} tokens, over "
                    f"{report['oversized_constraints']['bound_tokens']}: every context shows "
                    "them in one compact line; review them (`sonality facts`)"
                )
        model = report["model"]
        click.echo(
            "model      "
            + (model["name"] if model["configured"] else "not configured (set SONALITY_MODEL)")
            + ("" if "reachable" not in model else f" reachable={model['reachable']}")
            + (f" ({model['error']})" if "error" in model else "")
        )
        click.echo(f"embedding  {report['embedding']['model']}")

    emit(report, as_json, text)
    if not healthy:
        raise Unsuccessful


def _lease_line(lease: dict[str, Any]) -> str:
    """A held reflection lease in one line: who, until when, and what that means."""
    left = lease["expires_in_seconds"]
    if left > 0:
        when = f"expires in {left // 60}m {left % 60}s; `sonality reflect` exits 9 until then"
    else:
        when = f"expired {-left // 60}m {-left % 60}s ago; the next reflection takes it over"
    return f"held by {lease['owner']} until {lease['expires_at']} ({when})"


def _lag_report(oldest: list[OldestPending], bound_seconds: float) -> dict[str, Any]:
    """Per persona, the age of its oldest pending episode and unthought Thinker turn, and
    whether either is past ``bound_seconds`` (``SONALITY_LAG_DEGRADED_SECONDS``)."""
    from datetime import UTC, datetime

    from sonality.models import Lag

    now = datetime.now(UTC)
    lags = [Lag.at(o, now) for o in oldest]
    return {
        "bound_seconds": bound_seconds,
        "personas": {
            lag.persona_id: {
                "episode_seconds": round(lag.episode_seconds, 3),
                "turn_seconds": round(lag.turn_seconds, 3),
                "behind": lag.seconds > bound_seconds,
            }
            for lag in lags
        },
    }


def _vector_index_line(index: dict[str, Any]) -> str:
    """The Neo4j episode vector index in one line: the setting, what the server has."""
    setting = index.get("setting", "on" if index["wanted"] else "off")
    if index["state"] is None:
        have = "no index"
    else:
        scope = ", filtered by persona and user" if index["scoped"] else ""
        have = f"episode_embedding {index['state']} ({index['dimensions']} dimensions{scope})"
    hint = "" if index["matches_setting"] else "; run `sonality migrate` to match the setting"
    return f"SONALITY_NEO4J_VECTOR_INDEX={setting}: {have}{hint}"


async def _ping_model(settings: Settings) -> str | None:
    """None when the model answered; else why not, in one line (a refused configuration
    says so, with the provider's message)."""
    from sonality.errors import LLMConfigError, SonalityError
    from sonality.wiring import Prompt, settings_llm

    llm = settings_llm(settings)
    assert llm is not None
    try:
        await llm.text(Prompt.PING, {}, component="doctor")
    except LLMConfigError as exc:
        return f"misconfigured: {exc.message}"
    except SonalityError as exc:
        return f"{type(exc).__name__}: {exc.message}"
    return None
