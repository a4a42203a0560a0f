"""An upstream-style device-generic test class over a sample of op_db, run on spyre.

Run as a script (a fresh interpreter, like an upstream test file): it instantiates the class with
``instantiate_device_type_tests(..., only_for="privateuse1")``, runs it with unittest, and prints
one JSON object mapping each generated test name to its outcome: ``pass``, ``NotImplementedError:
<message>``, ``dtype: <message>`` or ``error: <message>``. Op names come from argv.
"""
import json
import sys
import unittest

import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests, ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase
from torch.utils._pytree import tree_map

NAMES = sys.argv[1].split(",")
SAMPLE = [op for op in op_db if op.name in NAMES and op.variant_test_name == ""]


def _cpu(x):
    return x.cpu() if isinstance(x, torch.Tensor) else x


class TestSimOpSample(TestCase):
    @ops(SAMPLE, allowed_dtypes=(torch.float32, torch.float64, torch.int32))
    def test_matches_cpu(self, device, dtype, op):
        sample = next(iter(op.sample_inputs(device, dtype)))
        actual = op(sample.input, *sample.args, **sample.kwargs)
        expected = op(_cpu(sample.input), *tree_map(_cpu, sample.args), **tree_map(_cpu, sample.kwargs))
        # Matmul-class ops run at fp16-class precision on spyre by default.
        torch.testing.assert_close(tree_map(_cpu, actual), expected, rtol=1e-2, atol=1e-2, equal_nan=True)


instantiate_device_type_tests(TestSimOpSample, globals(), only_for="privateuse1")


class _Collect(unittest.TextTestResult):
    outcomes: dict = {}

    def addSuccess(self, test):
        self.outcomes[test._testMethodName] = "pass"

    def addError(self, test, err):
        exc = err[1]
        while exc.__cause__ is not None:  # @ops wraps the error as "Caused by sample input ..."
            exc = exc.__cause__
        if isinstance(exc, NotImplementedError):
            kind = "NotImplementedError"
        elif "does not support dtype" in str(exc):
            kind = "dtype"
        else:
            kind = "error"
        self.outcomes[test._testMethodName] = f"{kind}: {str(exc).splitlines()[0]}"

    def addFailure(self, test, err):
        self.outcomes[test._testMethodName] = f"error: {str(err[1]).splitlines()[0]}"

    def addSkip(self, test, reason):
        self.outcomes[test._testMethodName] = f"skip: {reason}"


if __name__ == "__main__":
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(globals()["TestSimOpSamplePRIVATEUSE1"])
    runner = unittest.TextTestRunner(resultclass=_Collect, stream=open("/dev/null", "w"))
    runner.run(suite)
    print(json.dumps({"outcomes": _Collect.outcomes, "op_count": torch.spyre.sim.stats()["op_count"]}))
