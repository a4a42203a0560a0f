"""Simulator settings, read from ``SPYRE_*`` environment variables only (the device knows no relay)."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Mapping

import torch

from .constants import DEFAULT_CONSTANTS
from .coverage import DEFAULT_COVERAGE
from .yaml_files import SimConfigError

DEFAULT_UNSUPPORTED_DTYPES = ("float64", "complex128", "complex64")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclasses.dataclass(frozen=True)
class SimSettings:
    enabled: bool = True  # SPYRE_SIM=0 leaves a plain host-backed device (every op runs, nothing costed)
    coverage: Path = DEFAULT_COVERAGE  # SPYRE_COVERAGE
    constants: Path = DEFAULT_CONSTANTS  # SPYRE_CONSTANTS
    int64: str = "downcast"  # SPYRE_INT64: downcast | native
    reduced_precision: bool = True  # SPYRE_REDUCED_PRECISION: fp16-class matmul accumulation
    adapters: bool = True  # SPYRE_ADAPTERS: rewrite unsupported ops when an adapter applies
    warn_fallback: bool | None = None  # SPYRE_WARN_FALLBACK; None: the coverage table decides
    unsupported_dtypes: tuple[str, ...] = DEFAULT_UNSUPPORTED_DTYPES  # SPYRE_UNSUPPORTED_DTYPES


def _flag(env: Mapping[str, str], name: str, default: bool | None) -> bool | None:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise SimConfigError(f"{name}={raw!r}: expected 1 or 0 (true/false)")


def parse_dtypes(text: str, origin: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    for name in names:
        if not isinstance(getattr(torch, name, None), torch.dtype):
            raise SimConfigError(f"{origin}: {name!r} is not a torch dtype (e.g. float64,complex128)")
    return names


def _path(env: Mapping[str, str], name: str, default: Path) -> Path:
    raw = env.get(name)
    if not raw:
        return default
    path = Path(raw).expanduser()
    if not path.is_file():
        raise SimConfigError(f"{name}={raw}: no such file")
    return path


def settings_from_env(env: Mapping[str, str] | None = None) -> SimSettings:
    """Settings from ``env`` (default ``os.environ``); a bad value raises one clear ``SimConfigError``."""
    env = os.environ if env is None else env
    int64 = env.get("SPYRE_INT64", "downcast").strip().lower() or "downcast"
    if int64 not in ("downcast", "native"):
        raise SimConfigError(f"SPYRE_INT64={env['SPYRE_INT64']!r}: expected downcast or native")
    dtypes = env.get("SPYRE_UNSUPPORTED_DTYPES")
    return SimSettings(
        enabled=_flag(env, "SPYRE_SIM", True),
        coverage=_path(env, "SPYRE_COVERAGE", DEFAULT_COVERAGE),
        constants=_path(env, "SPYRE_CONSTANTS", DEFAULT_CONSTANTS),
        int64=int64,
        reduced_precision=_flag(env, "SPYRE_REDUCED_PRECISION", True),
        adapters=_flag(env, "SPYRE_ADAPTERS", True),
        warn_fallback=_flag(env, "SPYRE_WARN_FALLBACK", None),
        unsupported_dtypes=(
            DEFAULT_UNSUPPORTED_DTYPES if dtypes is None else parse_dtypes(dtypes, "SPYRE_UNSUPPORTED_DTYPES")
        ),
    )
