"""Done-when of the simulator: upstream op_db tests on spyre pass, raise NotImplementedError or dtype
errors exactly as the coverage table says, reproducibly (same outcomes when the table agrees)."""
import json

import pytest
import yaml

import tests.backend.sim.sim_helpers as sim_helpers  # noqa: F401  (torch first: it autoloads the device)
from spyre_device.sim.adapters import adapter_for
from spyre_device.sim.coverage import DEFAULT_COVERAGE, Status, load_coverage
from tests.backend.sim.sim_helpers import REPO, run_python  # noqa: F401  (run_python: a fixture)

# OpInfo name -> the aten op it dispatches (what the coverage table lists).
SAMPLE = {
    "add": "add", "mul": "mul", "abs": "abs", "exp": "exp", "sum": "sum", "mm": "mm", "softmax": "_softmax",
    "sin": "sin", "cos": "cos", "tril": "tril", "digamma": "digamma", "lgamma": "lgamma", "erfinv": "erfinv",
    "nn.functional.hardswish": "hardswish",
}
SCRIPT = REPO / "tests" / "backend" / "sim" / "sim_opdb_sample.py"


def run_sample(run_python, env=None) -> dict:
    code = f"import runpy, sys; sys.argv = ['x', {','.join(SAMPLE)!r}]; runpy.run_path({str(SCRIPT)!r}, run_name='__main__')"
    return json.loads(run_python(code, env, timeout=300).splitlines()[-1])["outcomes"]


def expected_outcomes(table, names) -> dict:
    """What the table predicts for every generated test: test name -> outcome kind and op."""
    expected = {}
    random_from = table.resolve("aten::random_.from").status  # make_tensor draws integers with random_.from
    for test in names:
        opinfo = next(n for n in sorted(SAMPLE, key=len, reverse=True) if f"_{n.replace('.', '_')}_spyre_" in test)
        aten = SAMPLE[opinfo]
        if test.endswith("_float64"):
            expected[test] = ("dtype", "Double")
        elif test.endswith("_int32") and random_from is Status.UNSUPPORTED:
            expected[test] = ("NotImplementedError", "aten::random_.from")
        elif table.resolve(f"aten::{aten}").status is Status.UNSUPPORTED and adapter_for(f"aten::{aten}.default") is None:
            expected[test] = ("NotImplementedError", f"aten::{aten}.")
        else:
            expected[test] = ("pass", "")
    return expected


def check(outcomes: dict, table) -> None:
    for test, (kind, needle) in expected_outcomes(table, outcomes).items():
        got = outcomes[test]
        if kind == "NotImplementedError":
            assert "is not implemented on the spyre device" in got, (test, got)
        assert got.split(":")[0] == kind, (test, got)
        assert needle in got, (test, got)


@pytest.fixture(scope="module")
def default_outcomes(run_python):
    return run_sample(run_python)


def test_op_db_sample_follows_the_default_table(default_outcomes):
    kinds = {outcome.split(":")[0] for outcome in default_outcomes.values()}
    assert kinds == {"pass", "NotImplementedError", "dtype"}  # a real mix, nothing else
    assert len(default_outcomes) >= 3 * len(SAMPLE) - 4  # float32, float64 and int32 variants
    check(default_outcomes, load_coverage())


def test_op_db_sample_follows_another_table_and_is_reproducible(default_outcomes, tmp_path, run_python):
    data = yaml.safe_load(DEFAULT_COVERAGE.read_text())
    elementwise = data["families"]["elementwise"]
    elementwise["fallback"].remove("sin")
    elementwise["unsupported"].append("sin")
    elementwise["unsupported"].remove("digamma")
    elementwise["native"].append("digamma")
    path = tmp_path / "flipped.yaml"
    path.write_text(yaml.safe_dump(data))
    outcomes = run_sample(run_python, {"SPYRE_COVERAGE": str(path)})
    check(outcomes, load_coverage(path))
    def kind(outcome):  # outcome and op, without the table file and line that differ by design
        return outcome.split(" (unsupported in coverage table")[0]

    changed = {t for t in outcomes if kind(outcomes[t]) != kind(default_outcomes[t])}
    assert changed == {f"test_matches_cpu_{op}_spyre_{dtype}" for op in ("sin", "digamma") for dtype in ("float32", "int32")}
