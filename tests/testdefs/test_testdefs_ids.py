"""Upstream test ids and their normalised form (class suffix drift, device and dtype suffixes)."""
import pytest

from testdefs.ids import normalise, parse


@pytest.mark.parametrize("raw", [
    "test/test_ops.py::TestCommonPRIVATEUSE1::test_add_spyre_float32",
    "test/test_ops.py::TestCommonSPYRE::test_add_spyre_float32",
    "test/test_ops.py::TestCommonPRIVATEUSE1::test_add_privateuse1_float32",
])
def test_suffix_drift_normalises_to_one_id(raw: str) -> None:
    assert normalise(raw) == "test/test_ops.py::TestCommon::test_add"


def test_parse_keeps_what_was_stripped() -> None:
    parsed = parse("test/test_ops.py::TestCommonPRIVATEUSE1::test_cat_spyre_float8_e4m3fn_float32")
    assert parsed.class_base == "TestCommon"
    assert parsed.device == "spyre"
    assert parsed.dtypes == ("float8_e4m3fn", "float32")
    assert parsed.raw == "test/test_ops.py::TestCommonPRIVATEUSE1::test_cat_spyre_float8_e4m3fn_float32"


def test_plain_and_parametrized_names_pass_through() -> None:
    assert normalise("test/t.py::TestPlain::test_q") == "test/t.py::TestPlain::test_q"
    assert normalise("test/t.py::test_function") == "test/t.py::test_function"
    assert parse("test/t.py::TestA::test_p[x-1]").method_base == "test_p[x-1]"


def test_device_word_inside_a_name_is_not_a_suffix() -> None:
    # only a trailing _<device>[_<dtype>...] is a suffix
    assert parse("test/t.py::TestA::test_cpu_fallback_count").device is None


def test_a_generic_name_ending_in_a_device_word_keeps_it() -> None:
    assert normalise("test/t.py::TestA::test_compare_cpu") == "test/t.py::TestA::test_compare_cpu"
    spyre = parse("test/t.py::TestAPRIVATEUSE1::test_compare_cpu_spyre_float32")
    assert (spyre.method_base, spyre.device, spyre.dtypes) == ("test_compare_cpu", "spyre", ("float32",))
    assert normalise("test/t.py::TestACPU::test_add_cpu_float32") == "test/t.py::TestA::test_add"  # a dtype follows
    assert normalise("test/t.py::TestASPYRE::test_add_spyre") == "test/t.py::TestA::test_add"
