"""The demo's ground truth holds on the real spyre device: regressions fail there and pass on cpu."""
from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ET

import pytest

from relay.demo import init_demo
from testdefs import ids

FILES = ["test_binary_ufuncs.py", "test_unary_ufuncs.py", "test_reductions.py", "test_ops.py", "test_nn.py"]


def _outcomes(run_process, test_dir, device: str, junit) -> dict[tuple[str, str | None], str]:
    """(normalised id, dtype or op-and-dtype) -> passed/failed/skipped, for one device."""
    env = dict(os.environ, PYTORCH_TESTING_DEVICE_ONLY_FOR=device, PYTHONDONTWRITEBYTECODE="1")
    run_process([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:testdefs",
                 f"--junitxml={junit}", *FILES], cwd=test_dir, env=env, capture_output=True, timeout=600)
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        classname = case.get("classname").split(".")
        tid = ids.parse(f"test/{classname[-2]}.py::{classname[-1]}::{case.get('name')}")
        state = "failed" if case.find("failure") is not None or case.find("error") is not None else \
            "skipped" if case.find("skipped") is not None else "passed"
        out[(tid.normalised, tid.dtype)] = state
    return out


def test_regressions_fail_on_spyre_and_pass_on_cpu(tmp_path, run_process):
    probe = run_process([sys.executable, "-c", "import torch; torch.ones(1, device='spyre')"],
                        capture_output=True, text=True, timeout=120)
    if probe.returncode:
        pytest.skip(f"the spyre device does not work here (make setup builds it): {probe.stderr.strip()[-200:]}")
    demo = tmp_path / "upstream"
    manifest = init_demo(demo)
    spyre = _outcomes(run_process, demo / "test", "privateuse1", tmp_path / "spyre.xml")
    cpu = _outcomes(run_process, demo / "test", "cpu", tmp_path / "cpu.xml")
    assert spyre and cpu
    for item in manifest["expected_regressions"]:
        assert spyre[(item["test"], item["dtype"])] == "failed", item
        assert cpu[(item["test"], item["dtype"])] == "passed", item
    for item in manifest["fixed"]:
        assert spyre[(item["test"], item["dtype"])] == "passed"
    in_files = tuple(f"test/{name}::" for name in FILES)
    known = {(k["test"] + ("_" + k["op"].replace(".", "_") if "op" in k else ""), k["dtype"])
             for k in manifest["known_failures"] if k["test"].startswith(in_files)}
    regressions = {(r["test"], r["dtype"]) for r in manifest["expected_regressions"]}
    assert {key for key, state in spyre.items() if state == "failed"} == regressions | known
    assert not [key for key, state in cpu.items() if state == "failed"]
