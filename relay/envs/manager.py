"""Environments per torch build under ``<cache dir>/envs/``: made once, reused by every later run.

An environment is a virtualenv holding one torch build, the packages a test process needs (the
``runner`` extra of this project), this project itself (editable, no dependencies: its own pin on
the relay's torch must not replace the environment's) and the spyre extension compiled against
that torch. ``relay-env.json`` beside it records what was installed; an environment without it is
a build that died half-way and is made again.

Concurrent runs and Celery workers share environments through a file lock per environment: the
first builds, the others wait, then reuse. The device is rebuilt (torch is not reinstalled) when
the backend sources change; a device that does not build or load is recorded, not raised, so every
run on that torch reports it at once without compiling again.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from filelock import FileLock, Timeout

from relay.envs.commands import run_streaming
from relay.envs.device_build import BACKEND, DeviceStatus, backend_fingerprint, build_device, compiler_killed, key_lines
from relay.envs.torch_builds import INSTALLED, TorchBuild
from relay.errors import UserError

MARKER = "relay-env.json"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
RUNNER_EXTRA = "runner"
LOCK_WAIT = 3600.0  # seconds a run waits for another process building the same environment
Progress = Callable[[str, str, "int | None", "int | None"], None]


class EnvBuildError(UserError):
    """torch itself could not be installed (a bad version, an unreachable URL): the run cannot start."""


@dataclass
class TorchEnv:
    """An environment ready to run tests: its interpreter, torch, and whether spyre works there."""

    build: TorchBuild
    python: Path
    torch_version: str
    device: DeviceStatus
    path: Path | None  # None: the relay's own (installed) environment
    reused: bool

    def to_dict(self) -> dict:
        return {"build": self.build.to_dict(), "python": str(self.python), "torch_version": self.torch_version,
                "device": self.device.to_dict(), "path": str(self.path) if self.path else None,
                "reused": self.reused}


def runner_requirements() -> list[str]:
    """The ``runner`` extra of this project: what a test process imports besides torch."""
    pyproject = PROJECT_ROOT / "pyproject.toml"
    if pyproject.is_file():  # a source tree (the usual case): read the extra where it is written
        import tomllib

        return list(tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"][RUNNER_EXTRA])
    requirements = []
    for line in metadata.requires("spyre-ci-relay") or []:
        requirement, _, marker = line.partition(";")
        if f'extra == "{RUNNER_EXTRA}"' in marker:
            requirements.append(requirement.strip())
    return requirements


class EnvManager:
    def __init__(self, cache_dir: Path, *, progress: Progress | None = None, backend: Path = BACKEND) -> None:
        self.root = Path(cache_dir).resolve() / "envs"  # absolute: builds run in other directories
        self.progress = progress or (lambda *args: None)
        self.backend = backend

    def ensure(self, build: TorchBuild) -> TorchEnv:
        """The environment for ``build``, made (or its device rebuilt) when needed."""
        if build.kind == INSTALLED:
            return self._installed(build)
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / build.env_key
        lock = FileLock(str(path) + ".lock")
        try:
            lock.acquire(timeout=0)
        except Timeout:
            self._emit(build, f"waiting for another process building {path.name}")
            try:
                lock.acquire(timeout=LOCK_WAIT)
            except Timeout:
                raise EnvBuildError(f"environment {path} is still being built after {LOCK_WAIT:g}s",
                                    hint="see `relay-cli envs list`; remove a stale lock file") from None
        try:
            return self._ensure_locked(build, path)
        finally:
            lock.release()

    def _ensure_locked(self, build: TorchBuild, path: Path) -> TorchEnv:
        marker = read_marker(path)
        python = path / "bin" / "python"
        # The directory name carries the torch build and the Python version; the marker proves it finished.
        reused = marker is not None and (marker.get("build") or {}).get("requirement") == build.requirement
        if not reused:
            shutil.rmtree(path, ignore_errors=True)  # half-built, or another build under the same name
            torch_version = self._install_torch(build, path)
            marker = {"build": build.to_dict(), "torch_version": torch_version, "created": _now(),
                      "packages": self._packages_fingerprint()}
            write_marker(path, marker)
        elif marker.get("packages") != self._packages_fingerprint():  # the runner extra changed: top up
            self._install_packages(build, path)
            marker["packages"] = self._packages_fingerprint()
            reused = False
        device = DeviceStatus.from_dict(marker["device"]) if marker.get("device") else None
        # A verdict recorded from a killed compiler (before such builds were retried) is no verdict.
        if (device is None or device.fingerprint != backend_fingerprint(self.backend)
                or compiler_killed("\n".join(device.lines))):
            device = build_device(python, marker["torch_version"], path, lambda line: self._emit(build, line),
                                  backend=self.backend)
            marker["device"] = device.to_dict()
            reused = False
        marker["last_used"] = _now()
        write_marker(path, marker)
        self._emit(build, f"{'reusing' if reused else 'built'} {path.name}: {device.verdict}")
        return TorchEnv(build, python, marker["torch_version"], device, path, reused)

    def _installed(self, build: TorchBuild) -> TorchEnv:
        """The relay's own interpreter; its device was built by `make setup`, so checking it is a load."""
        device = DeviceStatus("ok", build.version)
        return TorchEnv(build, Path(sys.executable), build.version, device, None, True)

    def _packages_fingerprint(self) -> str:
        text = json.dumps([runner_requirements(), str(PROJECT_ROOT)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def _install_torch(self, build: TorchBuild, path: Path) -> str:
        emit = lambda line: self._emit(build, line)  # noqa: E731
        started = time.monotonic()
        emit(f"creating {path.name} (torch {build.version or build.requirement}; a CUDA wheel takes minutes)")
        python = str(path / "bin" / "python")
        self._run_steps(build, path, [[sys.executable, "-m", "venv", str(path)],
                                      [python, "-m", "pip", "install", "--progress-bar", "off", build.requirement]],
                        remove_on_failure=True)
        self._install_packages(build, path)
        version = installed_version(path / "bin" / "python")
        emit(f"installed torch {version} in {time.monotonic() - started:.0f}s")
        return version

    def _install_packages(self, build: TorchBuild, path: Path) -> None:
        """The runner extra, then this project (editable, without dependencies: its torch pin stays out)."""
        python = str(path / "bin" / "python")
        self._run_steps(build, path, [
            [python, "-m", "pip", "install", "--progress-bar", "off", *runner_requirements()],
            [python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--progress-bar", "off",
             "-e", str(PROJECT_ROOT)]], remove_on_failure=False)

    def _run_steps(self, build: TorchBuild, path: Path, commands: list[list[str]], *, remove_on_failure: bool) -> None:
        for command in commands:
            ok, output = run_streaming(command, lambda line: self._emit(build, line))
            if not ok:
                if remove_on_failure:
                    shutil.rmtree(path, ignore_errors=True)
                raise EnvBuildError(f"cannot install {command[-1]} into {path.name}: "
                                    f"{'; '.join(key_lines(output, 3))}",
                                    hint="check the version, wheel file or URL (relay-cli envs list)")

    def _emit(self, build: TorchBuild, message: str) -> None:
        self.progress("env", f"torch {build.version or build.kind}: {message}", None, None)

    # -- listing and pruning --------------------------------------------------------------------

    def list(self) -> list[dict]:
        """Every environment with its marker facts, size in bytes and whether a build holds its lock."""
        if not self.root.is_dir():
            return []
        rows = []
        for path in sorted(p for p in self.root.iterdir() if p.is_dir()):
            marker = read_marker(path) or {}
            rows.append({"name": path.name, "path": str(path), "torch_version": marker.get("torch_version"),
                         "device": (marker.get("device") or {}).get("status", "not built"),
                         "complete": bool(marker), "created": marker.get("created"),
                         "last_used": marker.get("last_used"), "bytes": disk_usage(path),
                         "building": _locked(path)})
        return rows

    def prune(self, *, keep: set[str] = frozenset(), older_than_days: float | None = None,
              everything: bool = False) -> list[str]:
        """Remove incomplete environments, and unused ones by age (or all); a locked one is skipped."""
        removed = []
        cutoff = None if older_than_days is None else dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=older_than_days)
        for row in self.list():
            if row["name"] in keep or row["building"]:
                continue
            last = row["last_used"] or row["created"]
            stale = cutoff is not None and last is not None and dt.datetime.fromisoformat(last) < cutoff
            if everything or not row["complete"] or stale:
                lock = FileLock(row["path"] + ".lock")
                try:
                    with lock.acquire(timeout=0):
                        shutil.rmtree(row["path"], ignore_errors=True)
                except Timeout:
                    continue
                Path(row["path"] + ".lock").unlink(missing_ok=True)
                removed.append(row["name"])
        return removed


def read_marker(path: Path) -> dict | None:
    try:
        return json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None


def write_marker(path: Path, marker: dict) -> None:
    temp = path / (MARKER + ".tmp")
    temp.write_text(json.dumps(marker, indent=2, sort_keys=True))
    temp.replace(path / MARKER)  # atomic: a reader sees the old marker or the new one


def installed_version(python: Path) -> str:
    import subprocess

    done = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise EnvBuildError(f"{python} has no torch after installing it: {done.stderr.strip()[-300:]}")
    return done.stdout.strip()


def disk_usage(path: Path) -> int:
    total = 0
    for item in path.rglob("*"):
        try:
            if item.is_file() and not item.is_symlink():
                total += item.stat().st_size
        except OSError:
            continue
    return total


def _locked(path: Path) -> bool:
    lock = FileLock(str(path) + ".lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True
    lock.release()
    return False


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
