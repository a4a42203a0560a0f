"""Build the spyre extension inside an environment and check that it loads; a failure is a result.

The backend sources are copied into the environment before building, so builds for different
torch versions never share object files (ninja would happily reuse ones compiled for another torch)
and the source tree keeps no binary bound to a torch it is not running.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from relay.envs.commands import Emit, run_streaming
from relay.errors import UserError

BACKEND = Path(__file__).resolve().parents[2] / "backend"
OK, DOES_NOT_BUILD, DOES_NOT_LOAD = "ok", "does_not_build", "does_not_load"
KEY_LINES = 8  # compiler or loader lines kept for the verdict
LOG_TAIL = 20000  # characters of the full build log kept beside the environment
# Loads the device through torch's autoload and runs one op on it, as a test process would.
LOAD_CHECK = ("import torch; x = torch.ones(2, device='spyre'); "
              "assert (x + x).sum().item() == 4, 'spyre computed a wrong sum'; print(torch.__version__)")
_KEY = re.compile(r"(error[:\s]|undefined symbol|fatal|spyre-device: |Error: |ImportError|OSError)", re.IGNORECASE)
# GCC's words when the kernel killed the compiler (the OOM killer, most often): the machine failed, not the sources.
_COMPILER_KILLED = re.compile(r"Killed signal terminated program|internal compiler error: Killed")
BUILD_JOBS = 2  # parallel compiles; a compiler killed at this width is retried with one
_SOURCES = ("setup.py", "pyproject.toml", "csrc/**/*", "spyre_device/**/*.py", "spyre_device/**/*.yaml")


@dataclass
class DeviceStatus:
    """Whether the spyre device builds and loads on one torch; ``lines`` are the key error lines."""

    status: str  # ok | does_not_build | does_not_load
    torch_version: str
    lines: list[str] = field(default_factory=list)
    fingerprint: str = ""  # of the backend sources it was built from

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def verdict(self) -> str:
        if self.ok:
            return f"spyre builds and loads on torch {self.torch_version}"
        verb = "build" if self.status == DOES_NOT_BUILD else "load"
        return f"spyre does not {verb} on torch {self.torch_version}"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> DeviceStatus:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


class DeviceBuildKilled(UserError):
    """The compiler was killed twice: no verdict on the device, and none is recorded."""


def compiler_killed(output: str) -> bool:
    return bool(_COMPILER_KILLED.search(output))


def source_files(backend: Path = BACKEND) -> list[Path]:
    files = {p for pattern in _SOURCES for p in backend.glob(pattern)
             if p.is_file() and "build" not in p.relative_to(backend).parts and "__pycache__" not in p.parts}
    return sorted(files)


def backend_fingerprint(backend: Path = BACKEND) -> str:
    digest = hashlib.sha256()
    for path in source_files(backend):
        digest.update(str(path.relative_to(backend)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def key_lines(output: str, limit: int = KEY_LINES) -> list[str]:
    """The lines of a compiler or loader error worth showing; the output's tail when none match."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    hits = [line for line in lines if _KEY.search(line) and "warning" not in line.lower()]
    chosen = hits or lines[-limit:]
    return [line[:300] for line in dict.fromkeys(chosen)][:limit]


def sync_sources(backend: Path, copy: Path) -> None:
    """Make ``copy`` hold ``backend``'s sources, keeping its build directory: copies keep their
    modification times, so ninja recompiles only the files that changed since the last build
    (against the same torch: the copy belongs to one environment)."""
    wanted = {path.relative_to(backend) for path in source_files(backend)}
    if copy.is_dir():
        for path in [p for p in copy.rglob("*") if p.is_file() and "build" not in p.relative_to(copy).parts]:
            if path.relative_to(copy) not in wanted:
                path.unlink()
    for relative in wanted:
        (copy / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(backend / relative, copy / relative)


def build_device(python: Path, torch_version: str, work_dir: Path, emit: Emit, *,
                 backend: Path = BACKEND) -> DeviceStatus:
    """Copy ``backend`` into ``work_dir``, build and install it with ``python``, then load it."""
    fingerprint = backend_fingerprint(backend)
    source = work_dir / "backend"
    sync_sources(backend, source)
    emit(f"building the spyre extension against torch {torch_version}")
    built, output = _pip_install(python, source, emit, jobs=BUILD_JOBS)
    if not built and compiler_killed(output):
        # Each compile of the extension needs about 2 GB; a busy machine's OOM killer ends one.
        emit("the compiler was killed (out of memory?): building again with one job")
        built, output = _pip_install(python, source, emit, jobs=1)
    log = work_dir / "device-build.log"
    log.write_text(output[-LOG_TAIL:], encoding="utf-8")
    if not built and compiler_killed(output):
        raise DeviceBuildKilled(
            f"the compiler was killed twice building the spyre extension against torch {torch_version}; "
            "that says nothing about the sources, so no verdict is recorded",
            hint=f"free memory and run again; the build log is {log}")
    if not built:
        return DeviceStatus(DOES_NOT_BUILD, torch_version, key_lines(output), fingerprint)
    emit(f"loading the spyre device on torch {torch_version}")
    check = subprocess.run([str(python), "-c", LOAD_CHECK], capture_output=True, text=True, timeout=600,
                           cwd=work_dir)
    if check.returncode != 0:
        return DeviceStatus(DOES_NOT_LOAD, torch_version, key_lines(check.stderr + check.stdout), fingerprint)
    return DeviceStatus(OK, torch_version, [], fingerprint)


def _pip_install(python: Path, source: Path, emit: Emit, *, jobs: int) -> tuple[bool, str]:
    # the build imports torch, which must not autoload the build it replaces
    return run_streaming([str(python), "-m", "pip", "install", "--no-build-isolation", "--force-reinstall",
                          "--no-deps", str(source)], emit,
                         env_extra={"MAX_JOBS": str(jobs), "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
