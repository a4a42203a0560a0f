"""Stage 4's order: the variants a change reaches most directly run first, then by risk score."""
from selector.model import Candidate, Decision, Evidence
from selector.stages.base import SelectContext
from selector.stages.verify import directness, risk_order

T = "test/test_tree.py::TestTree::"
V = "test/test_tree.py::TestTreeSPYRE::"


def _ctx() -> SelectContext:
    ctx = SelectContext(source=None, from_ref="a", to_ref="b")
    yaml = "aten/src/ATen/native/native_functions.yaml"
    reasons = {
        "test_kernel": ("helper", [Evidence(file=yaml, op="digamma", detail="reads NATIVE_OPS ...")]),
        "test_values": ("modified", [Evidence(file="test/test_tree.py", detail="test body or decorators changed")]),
        "test_basics": ("always", [Evidence(rule="rules.yaml:3", detail="always-run rule in testdefs")]),
        "test_nn": ("source", [Evidence(file="torch/nn/functional.py", rule="rules.yaml:7", detail="relevance rule")]),
    }
    for name, (change, evidence) in reasons.items():
        ctx.candidates[T + name] = Candidate(test_id=T + name, file="test/test_tree.py", class_name="TestTree",
                                             name=name, change=change, reasons=evidence)
    scores = {"test_kernel_op_name_add_spyre_float32": 0.9, "test_kernel_op_name_digamma_spyre_float32": 0.5,
              "test_values_spyre_float32": 0.7, "test_values_spyre_float64": 0.6, "test_basics_spyre_float32": 1.0,
              "test_nn_spyre_float32": 0.95}
    for variant, score in scores.items():
        ctx.decisions[V + variant] = Decision(test_id=V + variant, selected=True, stage="verify", reason="r",
                                              score=score)
    ctx.outside_dtypes.add(V + "test_values_spyre_float64")  # spyre does not support float64
    return ctx


def test_the_most_directly_reached_variants_run_first_whatever_their_score():
    ctx = _ctx()
    parents = {v: T + v.rsplit("::", 1)[1].split("_spyre")[0].split("_op_name")[0] for v in ctx.decisions}
    assert [directness(ctx, v, parents[v]) for v in sorted(ctx.decisions)] == [3, 2, 1, 3, 1, 0]
    assert [v.rsplit("::", 1)[1] for v in risk_order(ctx, sorted(ctx.decisions), parents)] == [
        "test_values_spyre_float64",  # a dtype spyre does not support
        "test_values_spyre_float32", "test_kernel_op_name_digamma_spyre_float32",  # traced to the change
        "test_kernel_op_name_add_spyre_float32",  # traced, but the change names another op
        "test_basics_spyre_float32", "test_nn_spyre_float32",  # broad rules only, by score
    ]
