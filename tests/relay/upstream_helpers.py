"""A small upstream git repository (GitPython) with tags v2.13.0 and v2.14.0 and plain test files."""
from __future__ import annotations

import textwrap
from pathlib import Path

import git

BEFORE = {
    "test/test_math.py": '''
        def test_add():
            assert sum([1, 1]) == 2

        def test_mul():
            assert 2 * 3 == 6
    ''',
    "test/test_stable.py": '''
        def test_untouched():
            pass
    ''',
}
AFTER = {
    "test/test_math.py": '''
        import os

        def test_add():
            assert sum([1, 1]) == 2

        def test_mul():
            raise NotImplementedError("Could not run 'aten::mul.out' with arguments from the 'spyre' backend")

        def test_new_abort():
            os.abort()
    ''',
    "test/test_stable.py": BEFORE["test/test_stable.py"],
}


def _write(root: Path, files: dict[str, str]) -> None:
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(body).lstrip())


def make_upstream(root: Path, before: dict[str, str] = BEFORE, after: dict[str, str] = AFTER) -> Path:
    repo = git.Repo.init(root)
    with repo.config_writer() as config:
        config.set_value("user", "name", "Upstream").set_value("user", "email", "upstream@example.invalid")
    for files, tag in ((before, "v2.13.0"), (after, "v2.14.0")):
        _write(root, files)
        repo.index.add(list(files))
        repo.index.commit(f"release {tag}")
        repo.create_tag(tag)
    return root


EXPECTED = {
    "test/test_math.py::test_mul": ("failed", "new_failure"),
    "test/test_math.py::test_new_abort": ("crashed", "new_failure"),
}
