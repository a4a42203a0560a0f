"""Coverage tables: the default's rules, lookup precedence, and file:line errors for bad tables."""
import pytest

from spyre_device.sim.coverage import DEFAULT_COVERAGE, Status, load_coverage, unknown_ops, warn_unknown_ops
from spyre_device.sim.yaml_files import SimConfigError
from tests.backend.sim.sim_helpers import write

MINIMAL = """
schema_version: 1
name: mini
default: unsupported
families:
  elementwise:
    cost: elementwise
    native: [add]
    fallback: [sin]
    unsupported: ["pow.Tensor_Scalar"]
"""


@pytest.fixture(scope="module")
def default():
    return load_coverage()


def test_default_table_covers_the_common_families(default):
    families = set(default.entries[op].family for op in default.entries)
    assert {"elementwise", "reduction", "matmul", "shape_and_views", "indexing",
            "softmax_normalization", "activation", "random"} <= families
    counts = default.counts()
    assert all(counts[s.value] > 20 for s in Status)


@pytest.mark.parametrize(
    ("op", "status"),
    [
        ("aten::add.Tensor", Status.NATIVE),
        ("aten::add_.Tensor", Status.NATIVE),  # in-place form follows the functional entry
        ("aten::mm.default", Status.NATIVE),
        ("aten::_softmax.default", Status.NATIVE),
        ("aten::sin.default", Status.FALLBACK),
        ("aten::arange.start_out", Status.FALLBACK),
        ("aten::pow.Tensor_Scalar", Status.FALLBACK),  # small integer exponents: its adapter
        ("aten::digamma.out", Status.UNSUPPORTED),
        ("aten::random_.from", Status.NATIVE),  # in-place form of the entry "random"
        ("aten::_index_put_impl_.default", Status.NATIVE),
        ("aten::sgn.out", Status.NATIVE),  # abs's and l1_loss's backward
    ],
)
def test_default_rules(default, op, status):
    assert default.resolve(op).status is status


def test_unlisted_op_gets_the_stated_default(default):
    rule = default.resolve("aten::some_op_nobody_listed.default")
    assert rule.status is Status.FALLBACK
    assert "(default)" in rule.where


def test_every_default_entry_names_a_real_aten_op(default):
    assert unknown_ops(default) == []


def test_exact_overload_wins_over_the_plain_name(tmp_path):
    path = write(tmp_path, "t.yaml", MINIMAL.replace('native: [add]', 'native: [add, pow]'))
    table = load_coverage(path)
    assert table.resolve("aten::pow.Tensor_Scalar").status is Status.UNSUPPORTED
    assert table.resolve("aten::pow.Tensor_Tensor").status is Status.NATIVE
    assert table.resolve("aten::mul.Tensor").status is Status.UNSUPPORTED  # file default
    assert table.resolve("aten::sin.default").where == "t.yaml:8"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (MINIMAL.replace("default: unsupported", "default: maybe"), r"t\.yaml:3: default: Input should be"),
        (MINIMAL.replace("cost: elementwise", "cost: cheap"), r"t\.yaml:6: families\.elementwise\.cost"),
        (MINIMAL.replace("[sin]", "[Sin!]"), r"t\.yaml:8: families\.elementwise\.fallback\.0: String should match"),
        (MINIMAL.replace("[sin]", "[sin, add]"), r"t\.yaml:8: families\.elementwise\.fallback: op 'add' is already listed at t\.yaml:7"),
        (MINIMAL + "colour: blue\n", r"t\.yaml:10: colour: Extra inputs are not permitted"),
        (MINIMAL.replace("[sin]", "[sin"), r"t\.yaml:\d+: invalid YAML"),
        ("", r"t\.yaml:1: file is empty"),
    ],
)
def test_bad_table_names_file_line_and_field(tmp_path, text, expected):
    path = write(tmp_path, "t.yaml", text) if text else tmp_path / "t.yaml"
    if not text:
        path.write_text("")
    with pytest.raises(SimConfigError, match=expected):
        load_coverage(path)


def test_missing_table_is_one_clear_error(tmp_path):
    with pytest.raises(SimConfigError, match=r"nope\.yaml: cannot read file"):
        load_coverage(tmp_path / "nope.yaml")


def test_default_path_is_inside_the_package():
    assert DEFAULT_COVERAGE.is_file() and DEFAULT_COVERAGE.parent.name == "coverage"


def test_ops_unknown_to_this_torch_are_warned_with_their_line(tmp_path):
    path = write(tmp_path, "t.yaml", MINIMAL.replace("native: [add]", "native: [add, addd]"))
    table = load_coverage(path)
    assert unknown_ops(table) == ["addd (t.yaml:7)"]
    with pytest.warns(UserWarning, match=r"names ops this torch does not have: addd \(t\.yaml:7\)"):
        warn_unknown_ops(table)


VERSIONED = MINIMAL + """
torch_versions:
  sin: {removed_in: "2.14"}
  add: {added_in: "2.13"}
"""


@pytest.mark.parametrize("version, has_sin", [("2.13.0", True), ("2.14.1", False),
                                              ("2.14.0a0+git1234", False), ("2.13.0+cpu", True)])
def test_torch_versions_keep_only_the_ops_that_release_has(tmp_path, version, has_sin):
    table = load_coverage(write(tmp_path, "t.yaml", VERSIONED), torch_version=version)
    assert ("sin" in table.entries) is has_sin
    assert table.resolve("aten::add.Tensor").status is Status.NATIVE
    # An op this release lacks is not an unknown op: the warning stays for real typos.
    assert table.resolve("aten::sin").status is (Status.FALLBACK if has_sin else Status.UNSUPPORTED)


def test_default_table_names_only_ops_of_the_installed_torch(default):
    import torch

    assert unknown_ops(default) == []
    assert ("cholesky" in default.entries) is hasattr(torch.ops.aten, "cholesky")


def test_torch_versions_entry_must_be_listed_in_a_family(tmp_path):
    text = MINIMAL + "torch_versions:\n  cos: {removed_in: '2.14'}\n"
    with pytest.raises(SimConfigError, match=r"t\.yaml:11: torch_versions: op 'cos' is not listed in any family"):
        load_coverage(write(tmp_path, "t.yaml", text))


def test_torch_versions_bound_must_be_a_release(tmp_path):
    text = MINIMAL + "torch_versions:\n  sin: {removed_in: 'soon'}\n"
    with pytest.raises(SimConfigError, match=r"torch_versions\.sin\.removed_in"):
        load_coverage(write(tmp_path, "t.yaml", text))
