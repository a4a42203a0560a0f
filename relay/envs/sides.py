"""The torch of each side of a run: resolved from the request (or the refs), prepared, recorded.

A run is *version-true* when a side runs on a torch other than the installed one: then the from
side's selected tests run too, on the from torch, as the baseline the to side is judged against
(without it a failure that torch 2.13 already had would read as new on 2.14). When both sides
run on the installed torch the run is what it always was: the to side only, judged against the
latest stored run of the from side.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from relay.envs.device_build import BACKEND, DeviceStatus
from relay.envs.manager import EnvManager, Progress, TorchEnv
from relay.envs.torch_builds import INSTALLED, TorchBuild, build_for_tree, installed_build, parse_torch_value

SIDES = ("from", "to")
DEVICE_TEST_PREFIX = "spyre-device/"  # test id of the one record standing for a side whose device is broken


@dataclass
class Side:
    name: str  # from | to
    ref: str
    env: TorchEnv

    @property
    def device(self) -> DeviceStatus:
        return self.env.device

    def record(self) -> dict:
        """What the run keeps about this side (``Run.torch[side]``)."""
        env = self.env
        return {"ref": self.ref, "build": env.build.to_dict(), "torch_version": env.torch_version,
                "device": env.device.to_dict(), "env": str(env.path) if env.path else None,
                "reused": env.reused, "summary": describe(self)}


def resolve_builds(requested: dict[str, str | None], refs: dict[str, str], version_txt: dict[str, str | None], *,
                   by_ref: bool = True) -> dict[str, TorchBuild]:
    """One build per side: the requested value, else what the side's tree is a release of."""
    builds = {}
    for side in SIDES:
        value = requested.get(side)
        if value:
            builds[side] = parse_torch_value(value, field=f"--torch-{side}")
        elif by_ref:
            builds[side] = build_for_tree(refs[side], version_txt.get(side))
        else:
            builds[side] = installed_build("torch per side is off (torch_by_ref: false): installed torch")
    return builds


def is_version_true(builds: dict[str, TorchBuild]) -> bool:
    return any(build.kind != INSTALLED for build in builds.values())


def prepare_sides(cache_dir: Path, builds: dict[str, TorchBuild], refs: dict[str, str],
                  progress: Progress | None = None, backend: Path = BACKEND) -> dict[str, Side]:
    """Make or reuse each side's environment (one per distinct build; the two sides may share)."""
    manager = EnvManager(cache_dir, progress=progress, backend=backend)
    envs: dict[TorchBuild, TorchEnv] = {}
    sides = {}
    for side in SIDES:
        build = builds[side]
        key = TorchBuild(build.kind, build.version, build.requirement, "")  # same torch, whatever the reason
        if key not in envs:
            envs[key] = manager.ensure(build)
        env = envs[key]
        if env.build != build:  # shared environment: keep this side's own reason
            env = TorchEnv(build, env.python, env.torch_version, env.device, env.path, env.reused)
        sides[side] = Side(side, refs[side], env)
    return sides


def describe(side: Side) -> str:
    """One line for summaries: which torch, why, and the device verdict when it is not ok."""
    env = side.env
    where = "installed torch" if env.build.kind == INSTALLED else f"torch {env.torch_version} ({env.build.kind})"
    text = f"{side.name} {side.ref}: {where}; {env.build.why}"
    if not env.device.ok:
        text += f"; {env.device.verdict}"
    return text


def device_test_id(device: DeviceStatus) -> str:
    """Test id of the single result standing for every test of a side whose device is broken."""
    return f"{DEVICE_TEST_PREFIX}torch-{device.torch_version}::{device.status}"


def is_device_record(test_id: str) -> bool:
    return test_id.startswith(DEVICE_TEST_PREFIX)


def plan_sides(cache_dir: Path, *, requested: dict[str, str | None], refs: dict[str, str],
               read_version_txt, by_ref: bool = True, progress: Progress | None = None,
               backend: Path = BACKEND) -> dict[str, Side]:
    """Resolve and prepare both sides; ``read_version_txt(side)`` reads that side's ``version.txt``
    (called only for a side with no requested build)."""
    version_txt = {side: read_version_txt(side) for side in SIDES if not requested.get(side) and by_ref}
    builds = resolve_builds(requested, refs, version_txt, by_ref=by_ref)
    return prepare_sides(cache_dir, builds, refs, progress, backend)
