"""A warm test interpreter: imports torch, the OpInfo database and the device once, then forks
one child per pytest session.

Started by the runner with the interpreter and environment of the tests
(``python -m relay.execution.runner.forkserver``). Each request on stdin is one JSON line
``{"argv": [...], "cwd": DIR, "log": FILE}``; the server forks, the child becomes its own
process group (so the watchdog can kill it and whatever it started), sends its output to
``log`` and runs ``pytest.main(argv)``. The server answers ``{"pid": N}`` at once and
``{"pid": N, "status": S}`` when the child has ended (``S`` as ``Popen.returncode``: negative
for a signal). A child is a fresh copy of the warm interpreter, so per-file isolation and
fresh-process re-runs cost a fork, not an ``import torch``.

Preloading is best effort: a module that does not import here is imported (and fails) in the
child, where the failure is reported against the tests like any other. Preloading and the child's
pytest session are ``testdefs/warm_pytest.py``, shared with the selector's stage-4 collection.
"""
from __future__ import annotations

import json
import os
import sys

from relay.execution.runner.process import die_with_parent
from testdefs.warm_pytest import preload, run_pytest_child


def _child(request: dict, answers_fd: int) -> None:
    """In the forked child: never returns. Its own process group comes with die_with_parent."""
    def prepare() -> None:
        die_with_parent()
        os.close(answers_fd)
    run_pytest_child(request["argv"], request["cwd"], request["log"], append=True, prepare=prepare)


def _status(wait_status: int) -> int:
    return -os.WTERMSIG(wait_status) if os.WIFSIGNALED(wait_status) else os.WEXITSTATUS(wait_status)


def serve(requests, answers) -> None:
    """One child at a time: the runner drives a shard sequentially."""
    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
        answers.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, answers.fileno())
        answers.write(json.dumps({"pid": pid}) + "\n")
        answers.flush()
        _, wait_status = os.waitpid(pid, 0)
        answers.write(json.dumps({"pid": pid, "status": _status(wait_status)}) + "\n")
        answers.flush()


def main() -> int:
    failed = preload()
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # stray prints of preloaded modules must not corrupt the answers
    answers.write(json.dumps({"ready": True, "preload_failed": failed}) + "\n")
    answers.flush()
    serve(sys.stdin, answers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
