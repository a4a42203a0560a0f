"""Which torch a side of a run uses: resolution of ``--torch-from/--torch-to`` values and release refs.

A value is a version (``2.14.1``; ``2.14`` means the newest 2.14 patch on the package index), a wheel
file, a wheel URL, or ``installed``. Without a value, the side's upstream tree decides: a release
tree (``version.txt`` reads ``2.14.0``) runs on the newest patch of that release; a tree with no
released torch (``main`` reads ``2.15.0a0``; the demo upstream has no ``version.txt``) runs on the
installed torch, and the build says why.
"""
from __future__ import annotations

import functools
import hashlib
import json
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

from relay.errors import UserError

INSTALLED = "installed"
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?([a-z0-9.+]*)$")
_MINOR = re.compile(r"^(\d+)\.(\d+)$")
_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")  # version.txt of a release tree (not 2.15.0a0)
# torch-2.14.1-cp311-..., torch-2.14.0.dev20260101+cpu-cp311-... (PEP 427: '+' may be escaped)
_WHEEL_NAME = re.compile(r"^torch-([^-]+)-[^-]+-[^-]+-[^-]+\.whl$")


@dataclass(frozen=True)
class TorchBuild:
    """One torch for one side of a run, as recorded on the run and shown to the user."""

    kind: str  # installed | version | wheel | url
    version: str  # what torch reports (2.14.1, 2.13.0+cpu); "" for a URL not named like a wheel
    requirement: str  # what pip installs: torch==2.14.1, a wheel path or URL; "" for installed
    why: str  # how it was chosen, in words ("--torch-to 2.14", "v2.14.0 is release 2.14", ...)

    @property
    def env_key(self) -> str:
        """Directory name of this build's environment (one per torch build and Python)."""
        python = f"py{sys.version_info.major}{sys.version_info.minor}"
        if self.kind == "version":
            return f"torch-{self.version}-{python}"
        digest = hashlib.sha256(self.requirement.encode()).hexdigest()[:12]
        return f"torch-{self.version or 'url'}-{self.kind}-{digest}-{python}"

    @property
    def label(self) -> str:
        return f"{self.version or self.requirement} ({'installed' if self.kind == INSTALLED else self.kind})"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TorchBuild:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})


def installed_build(why: str) -> TorchBuild:
    try:
        version = metadata.version("torch")
    except metadata.PackageNotFoundError:  # pragma: no cover - the relay depends on torch
        version = "unknown"
    return TorchBuild(INSTALLED, version, "", why)


def parse_torch_value(value: str, *, field: str, resolve_minor=None) -> TorchBuild:
    """A ``--torch-from/--torch-to`` value (``field`` names it in errors) as a build."""
    value = value.strip()
    why = f"{field} {value}"
    if value == INSTALLED:
        return installed_build(why)
    if value.startswith(("http://", "https://", "file://")):
        name = Path(unquote(urlparse(value).path)).name
        return TorchBuild("url", _wheel_version(name) or "", value, why)
    if value.endswith(".whl"):
        path = Path(value).expanduser()
        if not path.is_file():
            raise UserError(f"{field} {value}: no such wheel file", hint="pass an existing torch-*.whl")
        version = _wheel_version(path.name)
        if version is None:
            raise UserError(f"{field} {value}: not a torch wheel name",
                            hint="expected torch-VERSION-PYTHON-ABI-PLATFORM.whl")
        return TorchBuild("wheel", version, str(path.resolve()), why)
    if _MINOR.match(value):
        version = (resolve_minor or newest_patch)(value)
        if version is None:
            raise UserError(f"{field} {value}: the package index has no torch {value}.x",
                            hint="pass a released version, a wheel file or a wheel URL")
        return TorchBuild("version", version, f"torch=={version}", f"{why}: newest {value} patch on the index")
    if _VERSION.match(value):
        return _installed_if_same(TorchBuild("version", value, f"torch=={value}", why))
    raise UserError(f"{field} {value!r} is not a torch build",
                    hint="expected a version (2.14 or 2.14.1), a torch-*.whl file, a wheel URL or 'installed'")


def build_for_tree(ref: str, version_txt: str | None, *, resolve_minor=None) -> TorchBuild:
    """The build a side runs on when no value was given: what its upstream tree is a release of."""
    text = (version_txt or "").strip()
    release = _RELEASE.match(text)
    if not text:
        return installed_build(f"{ref} names no torch release (no version.txt): installed torch")
    if release is None:
        return installed_build(f"{ref} is torch {text}, which has no release: installed torch")
    minor = f"{release.group(1)}.{release.group(2)}"
    version = (resolve_minor or newest_patch)(minor)
    if version is None:
        return installed_build(f"{ref} is release {minor}, which the package index does not have: installed torch")
    return _installed_if_same(TorchBuild("version", version, f"torch=={version}",
                                         f"{ref} is release {minor}: newest patch on the index"))


def _installed_if_same(build: TorchBuild) -> TorchBuild:
    """The installed torch serves a request for its own release (2.13.0 for 2.13.0+cpu): no new env."""
    installed = installed_build("")
    if installed.version.split("+")[0] == build.version:
        return TorchBuild(INSTALLED, installed.version, "", f"{build.why} (the installed torch is {build.version})")
    return build


def _wheel_version(name: str) -> str | None:
    match = _WHEEL_NAME.match(name)
    return match.group(1).replace("%2B", "+") if match else None


@functools.lru_cache(maxsize=32)
def newest_patch(minor: str) -> str | None:
    """The newest ``minor``.x torch pip would install here (index, find-links and constraints)."""
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
               "--quiet", "--report", "-", f"torch=={minor}.*"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return None
    try:
        report = json.loads(done.stdout)
        return report["install"][0]["metadata"]["version"]
    except (ValueError, KeyError, IndexError):
        return None
