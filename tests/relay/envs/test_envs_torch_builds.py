"""Which torch each side runs on: values of --torch-from/--torch-to and release refs, resolved for real
against this machine's package index (pip's own resolver, constraints included)."""
from importlib import metadata

import pytest

from relay.envs import INSTALLED, build_for_tree, parse_torch_value
from relay.envs.torch_builds import newest_patch
from relay.errors import UserError
from tests.tiers import starts_processes

INSTALLED_VERSION = metadata.version("torch")
INSTALLED_RELEASE = INSTALLED_VERSION.split("+")[0]


@pytest.fixture
@starts_processes
def pip_index():
    """The real lookup of a minor release's newest patch: it asks pip (a process) about the index."""
    return newest_patch


def test_a_minor_release_resolves_to_its_newest_patch_on_the_index(pip_index):
    # The index holds 2.14.0 and 2.14.1 (and pip's constraints cap torch at 2.14.1).
    assert pip_index("2.14") == "2.14.1"
    build = parse_torch_value("2.14", field="--torch-to", resolve_minor=pip_index)
    assert (build.kind, build.version, build.requirement) == ("version", "2.14.1", "torch==2.14.1")
    assert "newest 2.14 patch" in build.why


def test_a_minor_the_index_does_not_have_is_a_clear_error(pip_index):
    with pytest.raises(UserError, match=r"--torch-to 9\.99: the package index has no torch 9\.99\.x"):
        parse_torch_value("9.99", field="--torch-to", resolve_minor=pip_index)


def test_an_exact_version_is_installed_as_named():
    build = parse_torch_value("2.14.1", field="--torch-to")
    assert (build.kind, build.requirement, build.env_key.startswith("torch-2.14.1-py3")) == (
        "version", "torch==2.14.1", True)


def test_the_installed_release_needs_no_environment():
    build = parse_torch_value(INSTALLED_RELEASE, field="--torch-from")
    assert build.kind == INSTALLED and build.version == INSTALLED_VERSION
    assert f"the installed torch is {INSTALLED_RELEASE}" in build.why


def test_a_wheel_file_is_named_by_its_version_and_digest(tmp_path):
    wheel = tmp_path / "torch-2.14.0.dev20260101+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"not really a wheel")
    build = parse_torch_value(str(wheel), field="--torch-to")
    assert (build.kind, build.version, build.requirement) == ("wheel", "2.14.0.dev20260101+cpu", str(wheel))
    assert build.env_key.startswith("torch-2.14.0.dev20260101+cpu-wheel-")


def test_a_wheel_url_is_installed_from_the_url():
    url = "https://download.example.org/whl/torch-2.15.0.dev20260301%2Bcpu-cp311-cp311-linux_x86_64.whl"
    build = parse_torch_value(url, field="--torch-to")
    assert (build.kind, build.version, build.requirement) == ("url", "2.15.0.dev20260301+cpu", url)


@pytest.mark.parametrize("value, problem", [
    ("/nowhere/torch-2.14.1-cp311-cp311-linux_x86_64.whl", "no such wheel file"),
    ("latest", "is not a torch build"),
])
def test_bad_values_name_the_field_and_the_expected_form(value, problem):
    with pytest.raises(UserError, match=problem) as caught:
        parse_torch_value(value, field="--torch-to")
    assert str(caught.value).startswith("--torch-to")


def test_a_release_tree_runs_on_the_newest_patch_of_its_release(pip_index):
    build = build_for_tree("v2.14.0", "2.14.0\n", resolve_minor=pip_index)
    assert (build.kind, build.version) == ("version", "2.14.1")
    assert build.why == "v2.14.0 is release 2.14: newest patch on the index"


@pytest.mark.parametrize("version_txt, why", [
    (None, "main names no torch release (no version.txt): installed torch"),
    ("2.15.0a0\n", "main is torch 2.15.0a0, which has no release: installed torch"),
])
def test_a_tree_with_no_released_torch_runs_on_the_installed_torch_and_says_so(version_txt, why):
    build = build_for_tree("main", version_txt)
    assert (build.kind, build.version, build.why) == (INSTALLED, INSTALLED_VERSION, why)


def test_a_recorded_build_round_trips():
    build = parse_torch_value("2.14.1", field="--torch-to")
    assert type(build).from_dict(build.to_dict()) == build
