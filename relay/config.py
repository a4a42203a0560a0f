"""Settings: command-line flag > RELAY_* environment > relay.yaml > built-in default.

Secrets (webhook secret, GitHub token, API token, CRCR callback token) also read from
``RELAY_<NAME>_FILE`` and are never logged: ``Settings.__repr__`` hides them, and every
``Settings`` registers them (and the credentials inside its URLs) with ``relay.redaction``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from relay import redaction
from relay.errors import UserError

SECRET_FIELDS = ("webhook_secret", "github_token", "api_token", "crcr_callback_token")
URL_FIELDS = ("database_url", "broker_url", "upstream", "crcr_callback_url", "dashboard_url", "github_api_url")

# `relay-cli dashboard` listens here unless told otherwise (flags, or the port of RELAY_DASHBOARD_URL).
DEFAULT_DASHBOARD_ADDRESS = ("127.0.0.1", 8050)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    data_dir: Path = Path(".relay")
    database_url: str | None = None
    broker_url: str | None = None
    upstream: str | None = None
    cache_dir: Path | None = None
    webhook_secret: str | None = None
    github_token: str | None = None
    github_api_url: str = "https://api.github.com"
    crcr_callback_url: str | None = None
    crcr_callback_token: str | None = None  # sent as "Authorization: Bearer <token>" with every callback
    dashboard_url: str | None = None  # where people read the dashboard; unset: DEFAULT_DASHBOARD_ADDRESS
    api_token: str | None = None
    rules: Path | None = None
    executor: str = "local"
    shards: int = 1
    budget: str | None = None
    trigger_policy: Path | None = None  # the webhook relay's trigger policy YAML
    # How the runner treats each shard (relay/execution/runner): seconds per test and per shard, and
    # fresh-process re-runs of a failing test before it counts as a consistent failure.
    test_timeout: float = Field(300.0, gt=0)
    shard_timeout: float = Field(3600.0, gt=0)
    reruns: int = Field(1, ge=0)
    # The torch each side of a run uses (relay/envs, docs/runner.md "Torch per side"): a version,
    # wheel file or URL; unset, a release ref picks its newest patch unless torch_by_ref is off.
    torch_from: str | None = None
    torch_to: str | None = None
    torch_by_ref: bool = True
    # The spyre backend sources built into each per-torch environment: a maintainer's own working
    # tree of backend/ (default: the bundled one).
    backend_dir: Path | None = None
    # Crash takeover: work whose owner (relay, worker) stops heartbeating is taken over by another
    # within this many seconds (leases last half of it, the sweeper looks every quarter).
    takeover_seconds: float = Field(120.0, gt=0)

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'relay.db').resolve()}"

    @property
    def lease_seconds(self) -> float:
        return self.takeover_seconds / 2

    @property
    def sweep_interval(self) -> float:
        return self.takeover_seconds / 4

    @property
    def resolved_cache_dir(self) -> Path:
        return self.cache_dir or self.data_dir / "cache"

    def model_post_init(self, _context) -> None:
        redaction.register(*(getattr(self, name) for name in SECRET_FIELDS),
                           urls=tuple(getattr(self, name) for name in URL_FIELDS))

    def __repr_args__(self):  # secrets never reach logs
        for name, value in super().__repr_args__():
            if name in SECRET_FIELDS and value:
                yield name, redaction.MASK
            else:
                yield name, (redaction.redact_url(value) if name in URL_FIELDS else value)


def read_yaml_mapping(path: Path, what: str) -> dict[str, Any]:
    """A YAML file that must hold a mapping; any problem is a one-line UserError naming file:line."""
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except OSError as exc:
        raise UserError(f"{what} {path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise UserError(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise UserError(f"{what} {path}: expected a mapping, got {type(data).__name__}")
    return data


def _from_file(path: Path) -> dict[str, Any]:
    data = read_yaml_mapping(path, "config file")
    return {key.replace("-", "_"): value for key, value in data.items()}


def _from_env(environ: dict[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in Settings.model_fields:
        env = f"RELAY_{name.upper()}"
        if env in environ and environ[env] != "":
            values[name] = environ[env]
        elif name in SECRET_FIELDS and environ.get(f"{env}_FILE"):
            secret_path = Path(environ[f"{env}_FILE"])
            try:
                values[name] = secret_path.read_text().strip()
            except OSError as exc:
                raise UserError(f"{env}_FILE={secret_path}: cannot read secret: {exc.strerror}") from None
    return values


def load_settings(config: Path | None = None, overrides: dict[str, Any] | None = None,
                  environ: dict[str, str] | None = None) -> Settings:
    """Merge the four sources in precedence order; ``overrides`` are the command-line flags."""
    environ = dict(os.environ if environ is None else environ)
    path = config or (Path("relay.yaml") if Path("relay.yaml").exists() else None)
    if config is not None and not config.exists():
        raise UserError(f"config file {config} does not exist", hint="pass an existing --config PATH")
    merged: dict[str, Any] = _from_file(path) if path else {}
    merged.update(_from_env(environ))
    merged.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        return Settings(**merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "settings"
        source = f" in {path}" if path else ""
        raise UserError(f"setting '{field}'{source}: {first['msg']}") from None
