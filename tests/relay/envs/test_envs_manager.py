"""The environment manager's bookkeeping: listing, pruning, the lock one builder holds, and the
installed torch needing no environment. (Building real environments: test_envs_runs.py, slow.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import threading
import venv

import pytest
from filelock import FileLock

from relay.envs import EnvManager, installed_build
from relay.envs.device_build import DOES_NOT_LOAD, DeviceBuildKilled, build_device, compiler_killed, key_lines
from relay.envs.manager import MARKER, write_marker


def fake_env(root, name, *, complete=True, last_used="2026-12-01T10:00:00+00:00"):
    """A directory shaped like an environment (what list/prune read), without a torch in it."""
    path = root / "envs" / name
    (path / "bin").mkdir(parents=True)
    (path / "lib.bin").write_bytes(b"x" * 2048)
    if complete:
        write_marker(path, {"build": {"requirement": "torch==2.14.1"}, "torch_version": "2.14.1",
                            "device": {"status": "does_not_load"}, "created": last_used, "last_used": last_used})
    return path


def test_list_reports_torch_device_size_and_state(tmp_path):
    fake_env(tmp_path, "torch-2.14.1-py311")
    fake_env(tmp_path, "torch-2.15.0-py311", complete=False)
    rows = {row["name"]: row for row in EnvManager(tmp_path).list()}
    ready, half = rows["torch-2.14.1-py311"], rows["torch-2.15.0-py311"]
    assert (ready["torch_version"], ready["device"], ready["complete"], ready["building"]) == (
        "2.14.1", "does_not_load", True, False)
    assert ready["bytes"] >= 2048 and half["complete"] is False and half["device"] == "not built"


def test_prune_removes_half_built_and_old_environments_but_never_one_being_built(tmp_path):
    fake_env(tmp_path, "half", complete=False)
    fake_env(tmp_path, "old", last_used="2020-01-01T00:00:00+00:00")
    fake_env(tmp_path, "recent", last_used="2099-01-01T00:00:00+00:00")
    manager = EnvManager(tmp_path)
    assert manager.prune() == ["half"]
    assert manager.prune(older_than_days=30) == ["old"]
    building = fake_env(tmp_path, "building", complete=False)
    with FileLock(str(building) + ".lock"):
        assert {row["name"]: row["building"] for row in manager.list()}["building"] is True
        assert manager.prune(everything=True) == ["recent"]
    assert [row["name"] for row in manager.list()] == ["building"]


def test_a_second_process_waits_for_the_builder_and_reuses_its_environment(tmp_path, start_process):
    """The lock protocol across processes: the waiter says so, then finds the finished marker."""
    path = fake_env(tmp_path, "torch-x", complete=False)
    lock = FileLock(str(path) + ".lock")
    lock.acquire()
    waiter = start_process([sys.executable, "-c", f"""
from filelock import FileLock
import json, pathlib
with FileLock({str(path) + '.lock'!r}):
    print(json.loads(pathlib.Path({str(path / MARKER)!r}).read_text())['torch_version'])
"""], stdout=subprocess.PIPE, text=True)
    finished = threading.Event()
    threading.Thread(target=lambda: (waiter.wait(), finished.set()), daemon=True).start()
    assert not finished.wait(1.0)  # blocked while the builder holds the lock
    write_marker(path, {"torch_version": "2.14.1"})
    lock.release()
    assert waiter.communicate(timeout=60)[0].strip() == "2.14.1"


def test_the_installed_torch_needs_no_environment(tmp_path):
    env = EnvManager(tmp_path).ensure(installed_build("test"))
    assert env.path is None and env.python == type(env.python)(sys.executable) and env.reused
    assert not (tmp_path / "envs").exists()


def test_key_lines_pick_the_compiler_and_loader_errors():
    output = "\n".join(["[1/3] c++ -c generator.cpp", "generator.cpp:1:2: error: #error injected",
                        "warning: unused variable", "ninja: build stopped: subcommand failed.",
                        "ImportError: undefined symbol: _ZN3c1013GeneratorImpl12philox_stateEmRN2at6TensorES4_S4_"])
    assert key_lines(output) == ["generator.cpp:1:2: error: #error injected",
                                 "ImportError: undefined symbol: _ZN3c1013GeneratorImpl12philox_stateEmRN2at6TensorES4_S4_"]


@pytest.fixture
def relay_cli(run_process):
    """relay-cli in a subprocess, as a user runs it, with its data under ``cwd``."""
    def run(*args, cwd):
        environ = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
        environ["RELAY_DATA_DIR"] = str(cwd / "data")
        return run_process([sys.executable, "-m", "relay", *args], cwd=cwd, env=environ, capture_output=True,
                           text=True, timeout=300)
    return run


def test_envs_cli_lists_and_prunes(tmp_path, relay_cli):
    fake_env(tmp_path / "data" / "cache", "torch-2.14.1-py311")
    fake_env(tmp_path / "data" / "cache", "half", complete=False)
    listed = relay_cli("envs", "list", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert [row["name"] for row in json.loads(listed.stdout)] == ["half", "torch-2.14.1-py311"]
    pruned = relay_cli("envs", "prune", cwd=tmp_path)
    assert (pruned.returncode, pruned.stdout) == (0, "removed half\n")
    bad = relay_cli("envs", "prune", "--older-than", "-1", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("relay-cli: error: --older-than must be")


def test_run_rejects_a_bad_torch_value_before_recording_a_run(tmp_path, relay_cli):
    done = relay_cli("run", "--from", "2.13", "--to", "2.14", "--upstream", ".", "--torch-to", "latest", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "relay-cli: error: --torch-to 'latest' is not a torch build" in done.stderr
    assert not (tmp_path / "data" / "relay.db").exists()


def test_the_backend_copy_keeps_its_build_directory_and_unchanged_files_times(tmp_path):
    """What makes a device rebuild after a Python-only change cheap: ninja sees old objects as fresh."""
    from relay.envs.device_build import BACKEND, backend_fingerprint, sync_sources

    copy = tmp_path / "backend"
    sync_sources(BACKEND, copy)
    (copy / "csrc" / "removed_upstream.cpp").write_text("int gone;\n")
    (copy / "build").mkdir()
    (copy / "build" / "generator.o").write_bytes(b"object")
    before = (copy / "csrc" / "generator.cpp").stat().st_mtime_ns
    sync_sources(BACKEND, copy)
    assert not (copy / "csrc" / "removed_upstream.cpp").exists()  # would otherwise be compiled in
    assert (copy / "build" / "generator.o").read_bytes() == b"object"
    assert (copy / "csrc" / "generator.cpp").stat().st_mtime_ns == before
    assert backend_fingerprint(copy) == backend_fingerprint(BACKEND)


def test_a_killed_compiler_is_recognised_by_gccs_own_words():
    # The line GCC printed on this machine when the OOM killer ended cc1plus during a device build.
    oom = "c++: fatal error: Killed signal terminated program cc1plus"
    assert compiler_killed(f"[3/9] c++ -c host_fallback.cpp\n{oom}\ncompilation terminated.")
    assert not compiler_killed("generator.cpp:1:2: error: #error injected")


def probe_backend(tmp_path, *, killed_at: tuple[str, ...]):
    """A one-file C extension whose compiler is killed by a real signal (GCC's ``-wrapper`` runs it
    under a script that SIGKILLs itself) when the build runs with MAX_JOBS in ``killed_at``: the
    OOM killer's effect, without exhausting the test machine's memory."""
    source = tmp_path / "probe"
    source.mkdir()
    killer = tmp_path / "oom-killer.sh"
    killer.write_text("#!/bin/sh\nkill -9 $$\n")
    killer.chmod(0o755)
    (source / "csrc").mkdir()
    (source / "csrc" / "probe.c").write_text("int probe(void) { return 1; }\n")
    (source / "setup.py").write_text(
        "import os\nfrom setuptools import Extension, setup\n"
        f"args = ['-wrapper', {str(killer)!r}] if os.environ.get('MAX_JOBS') in {killed_at!r} else []\n"
        "setup(name='oom-probe', version='1', ext_modules=[Extension('oom_probe', ['csrc/probe.c'], "
        "extra_compile_args=args)])\n")
    return source


def probe_python(tmp_path):
    """A fresh environment that borrows this interpreter's packages (pip, setuptools) by a .pth file."""
    env = tmp_path / "env"
    venv.create(env, with_pip=False)
    [site] = env.glob("lib/python*/site-packages")
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return env / "bin" / "python"


def test_a_compiler_killed_once_is_retried_with_one_job(tmp_path):
    lines = []
    status = build_device(probe_python(tmp_path), "2.14.1", tmp_path, lines.append,
                          backend=probe_backend(tmp_path, killed_at=("2",)))
    assert "the compiler was killed (out of memory?): building again with one job" in lines
    # The second build succeeded; the probe is no torch backend, so the load check is what fails.
    assert status.status == DOES_NOT_LOAD


def test_a_compiler_killed_twice_is_an_error_not_a_verdict(tmp_path):
    with pytest.raises(DeviceBuildKilled, match="killed twice .* no verdict is recorded") as raised:
        build_device(probe_python(tmp_path), "2.14.1", tmp_path, lambda line: None,
                     backend=probe_backend(tmp_path, killed_at=("1", "2")))
    assert "free memory and run again" in str(raised.value)
    assert "Killed signal terminated program" in (tmp_path / "device-build.log").read_text()
