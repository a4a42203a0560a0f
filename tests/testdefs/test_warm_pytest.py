"""The warm interpreter the runner and stage 4 fork pytest sessions from (testdefs/warm_pytest.py)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_script(source: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(source)], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_a_child_runs_its_own_finalizers_and_leaves_the_parents_to_the_parent(tmp_path):
    marks = tmp_path / "marks.txt"
    (tmp_path / "test_child.py").write_text(textwrap.dedent(f"""
        import weakref

        class Held:
            pass

        HELD = Held()
        weakref.finalize(HELD, lambda: open({str(marks)!r}, "a").write("child\\n"))

        def test_one():
            pass
    """))
    done = run_script(f"""
        import os, weakref
        from testdefs.warm_pytest import run_pytest_child

        class Held:
            pass

        held = Held()
        weakref.finalize(held, lambda: open({str(marks)!r}, "a").write("parent\\n"))
        pid = os.fork()
        if pid == 0:
            run_pytest_child(["-q", "-p", "no:cacheprovider", "test_child.py"], {str(tmp_path)!r},
                             {str(tmp_path / "child.log")!r})
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status))
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "child exit 0" in done.stdout, (tmp_path / "child.log").read_text()
    # the child's exit ran the finalizer its test module registered, not the one it inherited;
    # the parent ran its own at its exit
    assert sorted(marks.read_text().split()) == ["child", "parent"]


def test_the_pytest_warm_up_leaves_no_trace_in_the_parent(tmp_path):
    done = run_script("""
        import os, sys
        print("printed before", flush=False)
        path, cwd = list(sys.path), os.getcwd()
        from testdefs.warm_pytest import preload
        failed = preload(modules=("pytest",))
        imported = [name for name in sys.modules if "warm" in name and name != "testdefs.warm_pytest"
                    or name == "conftest"]
        print("failed", failed, "path kept", sys.path == path, "cwd kept", os.getcwd() == cwd, "imported", imported)
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "printed before" in done.stdout  # buffered output from before the warm-up is not discarded with it
    assert "failed [] path kept True cwd kept True imported []" in done.stdout
    assert "no tests ran" not in done.stdout + done.stderr  # the warm-up's own report is discarded
