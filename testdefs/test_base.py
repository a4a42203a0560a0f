"""TORCH_TEST_DEVICES entry: ``TORCH_TEST_DEVICES=<path to this file>`` with rules in RELAY_TESTDEFS
(or given to the pytest plugin with --testdefs).

torch's common_device_type executes this file with runpy, passing its own globals, so
``PrivateUse1TestBase`` and ``device_type_test_bases`` are already defined; imported normally
(after common_device_type), they come from torch. The built-in PrivateUse1TestBase is removed from
the device bases so the device's variants are generated once, by TEST_CLASS.
"""
try:
    PrivateUse1TestBase  # noqa: B018 - provided by runpy init_globals
    device_type_test_bases  # noqa: B018
except NameError:
    from torch.testing._internal.common_device_type import PrivateUse1TestBase, device_type_test_bases

from testdefs.device_base import make_test_class, register_report_at_exit

TEST_CLASS = make_test_class(PrivateUse1TestBase)

if PrivateUse1TestBase in device_type_test_bases:
    device_type_test_bases.remove(PrivateUse1TestBase)

register_report_at_exit()
