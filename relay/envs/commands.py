"""Running the tools that build environments (venv, pip) with their output streamed as progress."""
from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

Emit = Callable[[str], None]


def run_streaming(command: list[str], emit: Emit, env_extra: dict[str, str] | None = None) -> tuple[bool, str]:
    """Run ``command``, passing each non-empty output line to ``emit``; (succeeded, whole output)."""
    env = {**os.environ, **(env_extra or {})}
    env.pop("PYTHONPATH", None)  # the environment's own packages, not the caller's source trees
    env.pop("PYTHONHOME", None)
    lines = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as process:
        for line in process.stdout:
            lines.append(line)
            if line.strip():
                emit(line.strip()[:160])
    return process.returncode == 0, "".join(lines)
