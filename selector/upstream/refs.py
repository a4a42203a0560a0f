"""How users spell refs (``2.13``, ``v2.14.0``, ``main``, a SHA, ``pr/123``) and the
closest-match hint when a ref does not exist."""
from __future__ import annotations

import difflib
import re

from selector.upstream.base import UpstreamError

_RELEASE = re.compile(r"^v?(\d+)\.(\d+)$")
_PR = re.compile(r"^pr/(\d+)$")
_SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")


def pr_number(ref: str) -> int | None:
    found = _PR.match(ref)
    return int(found.group(1)) if found else None


def looks_like_sha(ref: str) -> bool:
    return bool(_SHA.match(ref))


def spellings(ref: str) -> list[str]:
    """Names to try for ``ref``, in order: ``2.13`` -> ``v2.13.0``, ``release/2.13``, then as given."""
    found = _RELEASE.match(ref)
    out = []
    if found:
        major, minor = found.groups()
        out += [f"v{major}.{minor}.0", f"release/{major}.{minor}"]
    out.append(ref)
    return list(dict.fromkeys(out))


def unknown_ref(ref: str, known: list[str], where: str) -> UpstreamError:
    """The error for a ref that does not exist, naming the closest existing refs."""
    lowered = {name.lower(): name for name in known}
    close = difflib.get_close_matches(ref.lower(), list(lowered), n=3, cutoff=0.4)
    for spelled in spellings(ref)[:-1]:
        close += difflib.get_close_matches(spelled.lower(), list(lowered), n=3, cutoff=0.6)
    names = list(dict.fromkeys(lowered[c] for c in close))[:4]
    hint = f"closest refs: {', '.join(names)}" if names else "use a tag, a branch, a SHA, X.Y or pr/NUMBER"
    return UpstreamError(f"unknown ref '{ref}' in {where}; {hint}")
