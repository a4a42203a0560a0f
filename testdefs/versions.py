"""Torch versions for `when` conditions: the installed one, one named by a PyTorch ref, and parsing."""
from __future__ import annotations

import functools
import re
from importlib import metadata

from packaging.version import InvalidVersion, Version


@functools.lru_cache(maxsize=1)
def installed_torch_version() -> str:
    """The torch version of this environment, read from package metadata (torch is not imported)."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "0"


def version_from_ref(ref: str | None) -> str | None:
    """The torch version a PyTorch ref names, for ``decide(torch_version=...)``; None when it names none.

    ``2.14``, ``v2.14.0``, ``v2.14.0-rc2`` and ``release/2.14`` name 2.14; ``main``, a SHA or
    ``pr/123`` name no release (None: ``decide`` then uses the installed torch).
    """
    if not ref:
        return None
    text = ref.removeprefix("release/").removeprefix("v").split("-rc")[0]
    try:
        return str(Version(text)) if re.fullmatch(r"\d+\.\d+(\.\d+)?", text) else None
    except InvalidVersion:
        return None


def parse_torch_version(text: str | None) -> Version:
    """A nightly or local build (2.14.0a0+git1234, 2.13.0+cpu) counts as its release (2.14.0, 2.13.0);
    release refs (``release/2.14``, ``v2.14.0-rc2``) name their version. None: the installed torch."""
    text = text or installed_torch_version()
    try:
        return Version(Version(version_from_ref(text) or text).base_version)
    except InvalidVersion:
        raise ValueError(f"torch version {text!r} is not a version number (e.g. 2.14 or 2.14.0)") from None
