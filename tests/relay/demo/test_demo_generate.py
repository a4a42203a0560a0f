"""`relay-cli demo init`: a deterministic upstream whose ground truth agrees with stage 1."""
from __future__ import annotations

import git
import pytest

from relay.cli import main
from relay.demo import DemoError, init_demo
from relay.demo.generate import SCALABLE
from selector.changes import analyse
from selector.upstream import open_upstream
from testdefs.loader import load_rules
from tests.relay.demo.demo_manifest_helpers import DEMO_RULES, expected_changes, load_manifest


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo") / "upstream"
    assert main(["demo", "init", str(root)]) == 0
    return root


@pytest.fixture(scope="module")
def report(demo, tmp_path_factory):
    source = open_upstream(str(demo), cache_dir=tmp_path_factory.mktemp("cache"))
    yield analyse(source, "2.13", "2.14", rules=load_rules(DEMO_RULES))
    source.close()


def test_history_tags_and_branches(demo):
    repo = git.Repo(demo)
    assert {t.name for t in repo.tags} == {"v2.13.0", "v2.14.0"}
    assert {h.name for h in repo.heads} == {"main", "release/2.13", "release/2.14"}
    assert repo.commit("release/2.13") == repo.commit("v2.13.0")
    assert repo.commit("main") == repo.commit("v2.14.0")
    assert len(list(repo.iter_commits("v2.13.0..v2.14.0"))) >= 8
    assert not repo.is_dirty(untracked_files=True)  # the manifest is git-excluded, not part of the diff


def test_generation_is_deterministic(demo, tmp_path):
    again = tmp_path / "again"
    init_demo(again)
    first, second = load_manifest(demo), load_manifest(again)
    assert (first["from_sha"], first["to_sha"]) == (second["from_sha"], second["to_sha"])
    assert git.Repo(demo).tag("v2.14.0").tag.hexsha == git.Repo(again).tag("v2.14.0").tag.hexsha


# The SHAs the demo had when its files were Python string literals: moving them to data files
# (relay/demo/upstream/) changed nothing a user can see. A deliberate change to the demo updates them.
SHAS = {1: ("aeaa11b799e3c58f1413cf951076aa02541eb88e", "3537a10410c627e7693504ccbe161c3c703d7c80",
            "b669ff59e22c06419c70a22e4390d0a3284c92d2"),
        3: ("260494ab264ded00739325e70ffe5515820d4c42", "05ff03239c209c8add4359bebae7ca09c906497f",
            "7c9601f4afe0abaabd77d672d9c461a46ec09b2b")}


@pytest.mark.parametrize("scale", sorted(SHAS))
def test_generated_repository_is_the_one_users_know(tmp_path, scale):
    manifest = init_demo(tmp_path / "upstream", scale=scale)
    tag = git.Repo(tmp_path / "upstream").tag("v2.14.0").tag.hexsha
    assert (manifest["from_sha"], manifest["to_sha"], tag) == SHAS[scale]


def test_manifest_agrees_with_stage1(demo, report):
    manifest = load_manifest(demo)
    assert {c.test_id: c.change for c in report.candidates} == expected_changes(manifest)
    assert [r.test_id for r in report.removed if r.op is None] == manifest["removed"]
    assert sorted((r.test_id, r.op) for r in report.removed if r.op) == \
        sorted((x["test"], x["op"]) for x in manifest["removed_op_variants"])
    ignored = manifest["ignored"]["formatting_only"] + manifest["ignored"]["comment_or_docstring_only"]
    assert [i.test_id for i in report.ignored] == sorted(ignored)
    for item in manifest["candidates"]["opinfo"]:
        assert report.candidate(item["test"]).ops == item["ops"]
    for item in manifest["candidates"]["renamed"] + manifest["candidates"]["moved"]:
        assert report.candidate(item["test"]).reasons[0].detail.endswith(f"from {item['from']}")
    assert {f.path: f.kind for f in report.files} == manifest["files"]
    assert report.errors == []


def test_every_candidate_has_a_reason_with_file_and_hunk_or_rule(report):
    renamed_files = {f.path for f in report.files if f.status == "renamed"}
    for candidate in report.candidates:
        assert candidate.reasons
        for evidence in candidate.reasons:
            if evidence.file in renamed_files and evidence.hunk is None:  # a pure rename has no hunk
                assert evidence.detail.startswith("moved from test/test_index_ops.py::")
                continue
            assert evidence.rule or (evidence.file and evidence.hunk), (candidate.test_id, evidence)


def test_regressions_and_known_failures_are_ruled_as_the_manifest_says(demo):
    manifest = load_manifest(demo)
    rules = load_rules(DEMO_RULES)

    def mode(test: str, dtype: str, op: str | None = None) -> str:
        file, cls, name = test.split("::")
        suffix = f"_{op.replace('.', '_')}" if op else ""
        return rules.decide(f"{file}::{cls}PRIVATEUSE1::{name}{suffix}_spyre_{dtype}", op=op).mode

    assert all(mode(r["test"], r["dtype"]) == "mandatory_success" for r in manifest["expected_regressions"])
    assert all(mode(k["test"], k["dtype"], k.get("op")) == "xfail" for k in manifest["known_failures"])
    assert all(mode(f["test"], f["dtype"]) == "xfail_strict" for f in manifest["fixed"])
    assert all(mode(t, "float32") == "exclude" for t in manifest["not_applicable"])


def test_scale_adds_unaffected_files_only(tmp_path, report):
    big = tmp_path / "big"
    manifest = init_demo(big, scale=3)
    assert manifest["scaled_files"] == sorted(
        f"test/test_{name}_scaled{n}.py" for name in ("torch", "modules", "unary_opinfo") for n in (2, 3))
    source = open_upstream(str(big), cache_dir=tmp_path / "cache")
    scaled = analyse(source, "2.13", "2.14", rules=load_rules(DEMO_RULES))
    copies = {c.test_id.replace(f"{c.file}::{c.class_name}::", f"{c.file[:-3]}_scaled{n}.py::{c.class_name}Scaled{n}::")
              for c in report.candidates if c.file in SCALABLE and c.change != "always" for n in (2, 3)}  # the copies are reached by the same ops (always-run rules name exact ids)
    assert sorted(c.test_id for c in scaled.candidates) == sorted({c.test_id for c in report.candidates} | copies)
    assert len(scaled.inventory_to.files) == len(report.inventory_to.files) + 6
    source.close()


def test_refuses_to_overwrite_without_force(demo, tmp_path, capsys):
    assert main(["demo", "init", str(demo)]) == 2
    assert "exists and is not empty (pass --force to replace an earlier demo)" in capsys.readouterr().err
    other = tmp_path / "precious"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(DemoError, match="is not a demo upstream"):
        init_demo(other, force=True)
    assert (other / "keep.txt").read_text() == "mine"
    replaced = tmp_path / "replaced"
    init_demo(replaced)
    (replaced / "stale").write_text("x")
    init_demo(replaced, force=True)
    assert not (replaced / "stale").exists()


def test_scale_must_be_positive(tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["demo", "init", str(tmp_path / "x"), "--scale", "0"])
    assert caught.value.code == 2
    assert "must be 1 or more" in capsys.readouterr().err
