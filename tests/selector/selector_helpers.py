"""Shared fixtures for the selector's tests: a real tiny upstream git repository.

v2.13.0 has two device-generic test files and a source module; v2.14.0 modifies
``TestAlpha.test_add``, adds ``TestAlpha.test_sub`` and changes ``scale_values`` in the
source module, which ``TestBeta.test_scaling`` calls (stage 1 misses that; the agent
should add it).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import git

HEADER = '''\
import torch
from torch.testing._internal.common_utils import TestCase, run_tests
from torch.testing._internal.common_device_type import (
    dtypes, instantiate_device_type_tests, onlyCPU, onlyCUDA)
'''

ALPHA_V1 = HEADER + '''

class TestAlpha(TestCase):
    @dtypes(torch.float32, torch.float64)
    def test_add(self, device, dtype):
        x = torch.ones(3, device=device, dtype=dtype)
        self.assertEqual((x + x).cpu(), torch.full((3,), 2.0, dtype=dtype))

    def test_mul(self, device):
        x = torch.ones(3, device=device)
        self.assertEqual((x * x).cpu(), torch.ones(3))

    @onlyCUDA
    def test_cuda_graph(self, device):
        self.assertTrue(torch.cuda.is_available())

    def test_neg(self, device):
        self.assertEqual(torch.neg(torch.ones(2, device=device)).cpu(), -torch.ones(2))


instantiate_device_type_tests(TestAlpha, globals())

if __name__ == "__main__":
    run_tests()
'''

ALPHA_V2 = ALPHA_V1.replace(
    "        self.assertEqual((x + x).cpu(), torch.full((3,), 2.0, dtype=dtype))\n",
    "        y = torch.add(x, x, alpha=2)\n        self.assertEqual(y.cpu(), torch.full((3,), 3.0, dtype=dtype))\n",
).replace(
    "    @onlyCUDA\n",
    "    def test_sub(self, device):\n        x = torch.ones(3, device=device)\n"
    "        self.assertEqual((x - x).cpu(), torch.zeros(3))\n\n    @onlyCUDA\n",
)

BETA = HEADER + '''

class TestBeta(TestCase):
    def test_scaling(self, device):
        from demo.scaling import scale_values
        self.assertEqual(scale_values(torch.ones(2), 2.0), torch.full((2,), 2.0))

    def test_unrelated(self, device):
        self.assertEqual(torch.zeros(2, device=device).sum().item(), 0.0)


instantiate_device_type_tests(TestBeta, globals(), only_for=("cpu", "privateuse1"))
'''

SCALING_V1 = '''\
def scale_values(tensor, factor):
    """Multiply every element by factor."""
    return tensor * factor
'''

SCALING_V2 = '''\
def scale_values(tensor, factor):
    """Multiply every element by factor, in place when possible."""
    return tensor.mul(factor)
'''


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text) if text.startswith("\n") else text)


def make_upstream(root: Path) -> tuple[Path, str, str]:
    """A real git repository with tags v2.13.0 and v2.14.0; returns (path, from_sha, to_sha)."""
    root.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(root)
    with repo.config_writer() as config:
        config.set_value("user", "name", "Upstream")
        config.set_value("user", "email", "upstream@example.invalid")
    _write(root, {"test/test_alpha.py": ALPHA_V1, "test/test_beta.py": BETA, "demo/scaling.py": SCALING_V1,
                  "demo/__init__.py": ""})
    repo.git.add(A=True)
    repo.index.commit("v2.13.0")
    repo.create_tag("v2.13.0")
    from_sha = repo.head.commit.hexsha
    _write(root, {"test/test_alpha.py": ALPHA_V2, "demo/scaling.py": SCALING_V2})
    repo.git.add(A=True)
    repo.index.commit("v2.14.0")
    repo.create_tag("v2.14.0")
    return root, from_sha, repo.head.commit.hexsha


DIFFED = ["*.py", "*.yaml"]  # what stage 1 diffs (every changed Python and YAML file)


class CheckoutSource:
    """The smallest upstream source the later stages need: the repo itself as the to-ref tree."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def checkout(self, sha: str) -> Path:
        repo = git.Repo(self.path)
        assert repo.head.commit.hexsha == repo.commit(sha).hexsha, "fixture repo is left at the to-ref"
        return self.path


def context_for(root: Path, from_sha: str, to_sha: str, **options):
    """A SelectContext positioned after stage 1, with the candidates stage 1 finds in this fixture."""
    from selector.changes.report import ChangeReport
    from selector.model import Candidate, Evidence
    from selector.stages.base import SelectContext
    from selector.stages.diff import add_candidate
    from selector.upstream.git_source import GitUpstream

    ctx = SelectContext(source=CheckoutSource(root), from_ref="v2.13.0", to_ref="v2.14.0", **options)
    ctx.from_sha, ctx.to_sha = from_sha, to_sha
    # the diff's hunks as stage 1 leaves them in its report (one `git diff -U0` of the Python and YAML files)
    ctx.report = ChangeReport(from_ref=ctx.from_ref, to_ref=ctx.to_ref, from_sha=from_sha, to_sha=to_sha,
                              hunks=GitUpstream(root, cache_dir=root.parent / "cache").diff_hunks(
                                  from_sha, to_sha, DIFFED))
    hunk = Evidence(file="test/test_alpha.py", hunk="@@ -9,7 +9,8 @@", detail="body changed")
    for name, change in (("test_add", "modified"), ("test_sub", "added"), ("test_cuda_graph", "helper")):
        add_candidate(ctx, Candidate(test_id=f"test/test_alpha.py::TestAlpha::{name}", file="test/test_alpha.py",
                                     class_name="TestAlpha", name=name, change=change, reasons=[hunk]))
    ctx.funnel["changed"] = len(ctx.live())
    return ctx


RULES_YAML = """\
version: 1
relevance:
  always_run:
    - test/test_alpha.py::TestAlpha::test_mul
files:
  - path: test/test_alpha.py
    unlisted_test_mode: mandatory_success
    entries:
      - match: TestAlpha::test_sub
        mode: skip
        reason: {category: crash, text: "aborts the process"}
      - match: TestAlpha::test_add
        mode: xfail
        reason: {category: unsupported_op, text: "add with alpha not implemented"}
      - match: TestAlpha::test_add
        mode: exclude
        dtypes: {include: [float64]}
        reason: {category: unsupported_dtype, text: "no float64 on spyre"}
"""


def write_rules(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "alpha.yaml"
    path.write_text(RULES_YAML)
    return path


def report_for(root: Path, from_sha: str, to_sha: str, cache_dir: Path):
    """A ChangeReport carrying the real to-ref inventory and diff hunks (what later stages read of stage 1)."""
    from selector.changes import ChangeReport
    from selector.inventory.scan import scan_tree
    from selector.upstream import open_upstream

    source = open_upstream(str(root), cache_dir=cache_dir)
    return ChangeReport(from_ref="v2.13.0", to_ref="v2.14.0", from_sha=from_sha, to_sha=to_sha,
                        inventory_to=scan_tree(source, to_sha), hunks=source.diff_hunks(from_sha, to_sha, DIFFED))
