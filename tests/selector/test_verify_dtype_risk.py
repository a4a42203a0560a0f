"""Stage 4's device-aware risk: unsupported dtypes brought into code a test runs."""
from __future__ import annotations

from selector.model import Evidence
from selector.stages.dtype_risk import ChangeDtypeScanner, unsupported_dtypes

HELPER = '''def linear_reference(x, w):
    # double-check the shapes first
    return (x.double() @ w.double().t()).to(x.dtype)


def to_complex(x):
    return x.to(torch.complex128)
'''


def test_unsupported_dtypes_on_the_new_side_of_traced_hunks_count(tmp_path):
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "common.py").write_text(HELPER)
    unsupported = unsupported_dtypes({"float16", "bfloat16", "float32", "int32", "bool"})
    assert "float64" in unsupported and "float32" not in unsupported
    scan = ChangeDtypeScanner(tmp_path, unsupported).brought_by
    traced = Evidence(file="test/common.py", hunk="@@ -3,1 +3,1 @@", detail="uses changed helper linear_reference")
    assert scan([traced]) == {"float64": "test/common.py @@ -3,1 +3,1 @@"}
    comment_only = Evidence(file="test/common.py", hunk="@@ -2,1 +2,1 @@", detail="modified")
    assert scan([comment_only]) == {}  # "double-check" is no dtype
    similar = Evidence(file="test/common.py", hunk="@@ -1,7 +1,7 @@", detail="similarity 0.93")
    assert scan([similar]) == {}  # only stage 1's own tracing counts
    whole = Evidence(file="test/common.py", hunk="@@ -1,0 +1,7 @@", detail="added")
    assert set(scan([whole])) == {"float64", "complex128"}
    assert ChangeDtypeScanner(tmp_path, ["int8"]).brought_by([whole]) == {}


def test_a_risk_from_one_ops_hunk_reaches_only_that_ops_variants(tmp_path):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "opinfo.py").write_text("OpInfo('add', dtypes=(torch.float64,))\nOpInfo('mul')\n")
    scan = ChangeDtypeScanner(tmp_path, ["float64"]).brought_by
    add_hunk = Evidence(file="torch/opinfo.py", hunk="@@ -1,1 +1,1 @@", op="add", detail="OpInfo entry add modified")
    mul_hunk = Evidence(file="torch/opinfo.py", hunk="@@ -2,0 +2,1 @@", op="mul", detail="OpInfo entry mul added")
    reasons = [add_hunk, mul_hunk]
    assert scan(reasons, "test/test_ops.py::TestCommonCPU::test_every_op_add_cpu_float32") == \
        {"float64": "torch/opinfo.py @@ -1,1 +1,1 @@"}
    assert scan(reasons, "test/test_ops.py::TestCommonCPU::test_every_op_mul_cpu_float32") == {}
    assert scan(reasons, "test/test_ops.py::TestCommonCPU::test_every_op_addmm_cpu_float32") == {}  # not a prefix match
    assert set(scan(reasons)) == {"float64"}  # without a variant (the test as a whole) every reason counts
