"""The warm interpreter the runner and stage 4 fork pytest sessions from (testdefs/warm_pytest.py)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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


def test_children_of_one_prepared_session_each_collect_their_own_paths_alone(tmp_path):
    # pytest is configured once in the parent; each fork collects its own file, writes its own
    # testdefs report and log, and what it imports or changes stays in it
    (tmp_path / "test_a.py").write_text(textwrap.dedent("""
        import torch
        torch.set_default_dtype(torch.float64)

        def test_a1():
            pass

        def test_a2():
            pass
    """))
    (tmp_path / "test_b.py").write_text(textwrap.dedent("""
        import pytest, torch

        @pytest.mark.parametrize("dtype", [str(torch.get_default_dtype())])
        def test_b(dtype):
            pass
    """))
    (tmp_path / "test_empty.py").write_text("VALUE = 1\n")
    done = run_script(f"""
        import os
        from testdefs.warm_pytest import PreparedSession

        tmp = {str(tmp_path)!r}
        prepared, why = PreparedSession.prepare(["--collect-only", "-q", "-p", "no:cacheprovider",
                                                 f"--rootdir={{tmp}}", f"--testdefs-report={{tmp}}/unused.json"], tmp)
        assert prepared is not None, why
        for name in ("test_a.py", "test_b.py", "test_empty.py", "test_missing.py"):
            pid = os.fork()
            if pid == 0:
                prepared.run_child([name], f"{{tmp}}/{{name}}.log",
                                   option_values={{"testdefs_report": f"{{tmp}}/{{name}}.json"}})
            _, status = os.waitpid(pid, 0)
            print(name, os.waitstatus_to_exitcode(status))
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    # 5: nothing collected, 4: pytest's usage error for a path that is not there
    assert done.stdout.split("\n")[:4] == ["test_a.py 0", "test_b.py 0", "test_empty.py 5", "test_missing.py 4"]

    def decided(name):
        return sorted(json.loads((tmp_path / f"{name}.json").read_text())["decisions"])

    assert decided("test_a.py") == ["test_a.py::test_a1", "test_a.py::test_a2"]
    assert decided("test_b.py") == ["test_b.py::test_b[torch.float32]"]  # test_a's default dtype stayed in its fork
    assert decided("test_empty.py") == []
    assert "test_a.py::test_a1" in (tmp_path / "test_a.py.log").read_text()
    assert "ERROR: file or directory not found: test_missing.py" in (tmp_path / "test_missing.py.log").read_text()
    assert not (tmp_path / "unused.json").exists()  # the parent's session never ends


def test_a_session_that_cannot_be_prepared_says_why_and_changes_nothing_for_pytest_main(tmp_path):
    (tmp_path / "conftest.py").write_text("import module_missing_for_the_conftest\n")
    done = run_script(f"""
        from testdefs.warm_pytest import PreparedSession

        prepared, why = PreparedSession.prepare(["--collect-only", "-q", "-p", "no:cacheprovider"], {str(tmp_path)!r})
        print(prepared, why)
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("None ") and "module_missing_for_the_conftest" in done.stdout


def test_the_warm_heap_is_backed_by_huge_pages_where_the_kernel_can(tmp_path):
    done = run_script("""
        import os
        from testdefs.warm_pytest import back_with_huge_pages

        heap = [bytearray(4096) for _ in range(20000)]  # 80 MiB of small objects, as torch and op_db leave
        moved = back_with_huge_pages()
        rollup = open("/proc/self/smaps_rollup").read()
        huge_kib = int(rollup.split("AnonHugePages:")[1].split()[0])
        pid = os.fork()
        if pid == 0:  # a child writes to the shared heap: its own copy, the parent's unchanged
            heap[100][0] = 7
            os._exit(0 if heap[100][0] == 7 else 1)
        _, status = os.waitpid(pid, 0)
        print(moved, huge_kib, os.waitstatus_to_exitcode(status), heap[100][0])
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    moved, huge_kib, child, parent_value = map(int, done.stdout.split())
    assert (child, parent_value) == (0, 0)
    if moved == 0:
        pytest.skip("this kernel does not collapse memory into huge pages (MADV_COLLAPSE)")
    assert moved >= 64 << 20 and huge_kib * 1024 >= moved
