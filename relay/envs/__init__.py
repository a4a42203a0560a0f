"""Per-torch environments: which torch each side of a run uses, and a virtualenv per torch build
with the spyre device compiled against it (docs/runner.md, "Torch per side")."""
from relay.envs.device_build import DOES_NOT_BUILD, DOES_NOT_LOAD, OK, DeviceStatus
from relay.envs.manager import EnvBuildError, EnvManager, TorchEnv
from relay.envs.torch_builds import INSTALLED, TorchBuild, build_for_tree, installed_build, parse_torch_value

__all__ = ["DOES_NOT_BUILD", "DOES_NOT_LOAD", "INSTALLED", "OK", "DeviceStatus", "EnvBuildError", "EnvManager",
           "TorchBuild", "TorchEnv", "build_for_tree", "installed_build", "parse_torch_value"]
