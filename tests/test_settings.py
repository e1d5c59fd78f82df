"""Settings: names, secrets, and the docker-compose file's consistency with them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from sonality.config import Settings

ROOT = Path(__file__).resolve().parent.parent


def test_secrets_never_show_in_reprs_or_dumps() -> None:
    """Passwords and API keys are masked in repr, str and model dumps."""
    s = Settings(neo4j_password="hunter2-secret", llm_api_key="sk-very-secret")
    for text in (repr(s), str(s), str(s.model_dump()), s.model_dump_json()):
        assert "hunter2-secret" not in text and "sk-very-secret" not in text


def test_environment_names_use_the_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    """SONALITY_* variables reach their fields; unknown schemes are rejected clearly."""
    monkeypatch.setenv("SONALITY_STORE", "bolt://db:7687")
    monkeypatch.setenv("SONALITY_EMBEDDING_DIMENSIONS", "128")
    s = Settings()
    assert s.store_backend == "neo4j" and s.embedding_dimensions == 128
    monkeypatch.setenv("SONALITY_STORE", "postgres://x")
    with pytest.raises(ValidationError, match="SONALITY_STORE"):
        Settings()


def test_default_store_is_a_sqlite_file_in_the_user_data_dir(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With nothing set, the store is the embedded SQLite default."""
    monkeypatch.delenv("SONALITY_STORE", raising=False)
    s = Settings()
    assert s.store_backend == "sqlite" and s.sqlite_path.name == "sonality.db"


def test_compose_file_only_uses_known_settings() -> None:
    """Every SONALITY_* variable in docker-compose.yml is a real setting, and the services
    the README names are there with the pieces they need."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"neo4j", "migrate", "worker", "api"} <= set(services)
    assert services["neo4j"]["image"].startswith("neo4j:2026.")  # filtered vector search
    assert "healthcheck" in services["neo4j"]
    assert {"7474:7474", "7687:7687"} <= set(services["neo4j"]["ports"])
    fields = set(Settings.model_fields)
    for name in ("migrate", "worker", "api"):
        env = services[name]["environment"]
        keys = [k for k in env if k.startswith("SONALITY_")]
        assert keys
        for key in keys:
            assert key.removeprefix("SONALITY_").lower() in fields, key
    assert services["worker"]["command"][0] == "worker"
    assert services["api"]["command"][0] == "serve"
    assert "/readyz" in " ".join(services["api"]["healthcheck"]["test"])
    assert set(compose["volumes"]) == {"neo4j-data", "neo4j-logs"}


def test_compose_builds_the_sonality_image_once() -> None:
    """One service builds the Sonality image under a name; migrate, worker and api run that
    image, and the one that does not build it never tries to pull it from a registry."""
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    builders = [name for name, svc in services.items() if "build" in svc]
    assert len(builders) == 1
    image = services[builders[0]]["image"]
    assert services["migrate"]["image"] == services["worker"]["image"] == image
    assert services["api"]["image"] == image
    for name in ("migrate", "worker", "api"):
        if name not in builders:
            assert services[name]["pull_policy"] == "never"


def test_compose_worker_health_check_reads_the_heartbeat_it_writes() -> None:
    """The worker's health check runs the image's heartbeat check on the file the worker's
    command touches, and the scan interval it judges by reaches the worker's environment."""
    worker = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["worker"]
    command = worker["command"]
    heartbeat = command[command.index("--heartbeat-file") + 1]
    check = worker["healthcheck"]["test"]
    assert check[:2] == ["CMD", "sonality-worker-healthcheck"] and check[2] == heartbeat
    assert "/usr/local/bin/sonality-worker-healthcheck" in (ROOT / "Dockerfile").read_text()
    assert "SONALITY_WORKER_SCAN_SECONDS" in worker["environment"]


@pytest.mark.parametrize(
    ("given", "setting"),
    [("auto", "auto"), ("on", "on"), ("off", "off"), ("true", "on"), ("false", "off"), ("1", "on")],
)
def test_the_vector_index_setting_takes_its_old_booleans(
    monkeypatch: pytest.MonkeyPatch, given: str, setting: str
) -> None:
    """SONALITY_NEO4J_VECTOR_INDEX is auto (the default), on or off; the true/false it was
    before still mean on/off; anything else is refused; SONALITY_CACHE_MB defaults to 256."""
    monkeypatch.setenv("SONALITY_NEO4J_VECTOR_INDEX", given)
    assert Settings().neo4j_vector_index == setting
    monkeypatch.delenv("SONALITY_NEO4J_VECTOR_INDEX")
    assert (Settings().neo4j_vector_index, Settings().cache_mb) == ("auto", 256)
    monkeypatch.setenv("SONALITY_NEO4J_VECTOR_INDEX", "sometimes")
    with pytest.raises(ValueError, match="neo4j_vector_index"):
        Settings()
