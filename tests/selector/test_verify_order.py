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


CMI = "torch/testing/_internal/common_methods_invocations.py"


def _opinfo_ctx(root):
    """A sample function of ``mul`` changed; three test files run ``mul``'s samples, one of them
    loads the checkout's OpInfo file by its path, one only mentions that path in a comment."""
    ctx = SelectContext(source=None, from_ref="a", to_ref="b", checkout=root)
    files = {
        "test/test_ops.py": "from torch.testing._internal.common_methods_invocations import op_db\n",
        "test/test_tree.py": f'TREE_OP_DB = _load("cmi", "{CMI}").op_db\n',
        "test/test_noted.py": f"from torch.testing._internal.common_methods_invocations import op_db  # {CMI}\n",
    }
    scores = {"test/test_ops.py": 0.95, "test/test_tree.py": 0.75, "test/test_noted.py": 0.9}
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
        parent = f"{path}::TestOps::test_samples"
        ctx.candidates[parent] = Candidate(test_id=parent, file=path, class_name="TestOps", name="test_samples",
                                           change="opinfo", reasons=[Evidence(file=CMI, op="mul", detail="OpInfo entry mul modified")])
        variant = f"{path}::TestOpsSPYRE::test_samples_mul_spyre_float32"
        ctx.decisions[variant] = Decision(test_id=variant, selected=True, stage="verify", reason="r", score=scores[path])
    return ctx


def test_a_test_reading_the_changed_file_by_its_path_runs_first_in_its_tier(tmp_path):
    """The tests run the installed torch: only the file that loads the checkout's OpInfo file by its
    path surely runs the changed sample function, whatever its score."""
    ctx = _opinfo_ctx(tmp_path)
    parents = {v: v.replace("TestOpsSPYRE", "TestOps").replace("_mul_spyre_float32", "") for v in ctx.decisions}
    assert {directness(ctx, v, parents[v]) for v in ctx.decisions} == {1}
    assert [v.split("::")[0] for v in risk_order(ctx, sorted(ctx.decisions), parents)] == [
        "test/test_tree.py", "test/test_ops.py", "test/test_noted.py"]  # a comment naming the path reads nothing


def test_without_a_checkout_the_tier_is_ordered_by_score(tmp_path):
    ctx = _opinfo_ctx(tmp_path)
    ctx.checkout = None  # stage 1 alone (--stage diff) makes no checkout to read
    parents = {v: v.replace("TestOpsSPYRE", "TestOps").replace("_mul_spyre_float32", "") for v in ctx.decisions}
    assert [v.split("::")[0] for v in risk_order(ctx, sorted(ctx.decisions), parents)] == [
        "test/test_ops.py", "test/test_noted.py", "test/test_tree.py"]


def test_each_variant_carries_the_reasons_that_name_its_op_as_one_by_one_matching_would():
    # ReasonsByOp answers for hundreds of ops per variant at once (a set of the name's word runs);
    # it must agree with asking reaches_variant of each reason
    import random

    from selector.model import Evidence
    from selector.stages.dtype_risk import reaches_variant
    from selector.stages.verify import ReasonsByOp

    words = ["add", "nn", "functional", "gelu", "linalg", "det", "x", "", "_", "float32", "spyre"]
    rng = random.Random(7)
    for _ in range(500):
        ops = {".".join(rng.choice(words) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(0, 6))}
        evidence = [Evidence(file=f"f{n}.py", op=op or None) for n, op in enumerate(sorted(ops) + [""])]
        rng.shuffle(evidence)
        method = "test_" + "_".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
        one_by_one = [e for e in evidence if not e.op or reaches_variant(e.op, method)] or evidence
        assert ReasonsByOp(evidence).for_variant(f"test/test_x.py::TestX::{method}") == one_by_one, (method, ops)
