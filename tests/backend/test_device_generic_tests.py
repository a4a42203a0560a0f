"""An upstream-style device-generic test class gets a spyre variant that runs on spyre."""

import re
import sys
import textwrap

GENERIC_TESTS = textwrap.dedent(
    """
    import os
    import torch
    from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests
    from torch.testing._internal.common_utils import TestCase, run_tests

    LOG = os.environ["DEVICE_LOG"]


    class TestGenericOps(TestCase):
        def _log(self, *tensors):
            with open(LOG, "a") as f:
                f.write(" ".join(str(t.device) for t in tensors) + "\\n")

        def test_add_matches_cpu(self, device):
            x = torch.arange(6.0, device=device)
            y = x + x
            self._log(x, y)
            self.assertEqual(y.cpu(), torch.arange(6.0) * 2)

        @dtypes(torch.float32, torch.int32)
        def test_sum(self, device, dtype):
            x = torch.ones(4, 4, dtype=dtype, device=device)
            self._log(x)
            self.assertEqual(x.sum().item(), 16)

        def test_view_aliases(self, device):
            x = torch.zeros(2, 2, device=device)
            x.view(4)[0] = 1
            self._log(x)
            self.assertEqual(x[0, 0].item(), 1)

        def test_expected_to_fail(self, device):
            self.assertEqual(torch.ones(1, device=device).item(), 2.0)


    instantiate_device_type_tests(TestGenericOps, globals(), only_for="privateuse1")

    if __name__ == "__main__":
        run_tests()
    """
)


def test_instantiate_device_type_tests_gives_a_spyre_variant(tmp_path, run_process):
    module = tmp_path / "test_generic_ops_upstream_style.py"
    module.write_text(GENERIC_TESTS)
    log = tmp_path / "devices.log"
    result = run_process(
        [sys.executable, "-m", "pytest", str(module), "-v", "-p", "no:cacheprovider", "-p", "no:testdefs"],
        capture_output=True, text=True, timeout=180, cwd=tmp_path,
        env={**__import__("os").environ, "DEVICE_LOG": str(log)},
    )
    outcomes = dict(re.findall(r"::(\w+::\w+) (PASSED|FAILED|SKIPPED|ERROR)", result.stdout))
    spyre_class = next(name.split("::")[0] for name in outcomes)
    assert re.fullmatch(r"TestGenericOps(SPYRE|PRIVATEUSE1)", spyre_class), result.stdout
    assert outcomes == {
        f"{spyre_class}::test_add_matches_cpu_spyre": "PASSED",
        f"{spyre_class}::test_sum_spyre_float32": "PASSED",
        f"{spyre_class}::test_sum_spyre_int32": "PASSED",
        f"{spyre_class}::test_view_aliases_spyre": "PASSED",
        f"{spyre_class}::test_expected_to_fail_spyre": "FAILED",
    }, result.stdout + result.stderr
    # Every tensor the tests created lived on the spyre card.
    devices = set(log.read_text().split())
    assert devices == {"spyre:0"}
