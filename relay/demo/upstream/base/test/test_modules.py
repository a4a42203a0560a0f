import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_modules import module_db, modules
from torch.testing._internal.common_utils import TestCase, run_tests


class TestModuleDemo(TestCase):
    @modules(module_db, allowed_dtypes=(torch.float32,))
    def test_construct_on_device(self, device, dtype, module_info, training):
        inputs = module_info.module_inputs_func(module_info, device=device, dtype=dtype,
                                                requires_grad=False, training=training)
        for module_input in inputs[:1]:
            args, kwargs = module_input.constructor_input.args, module_input.constructor_input.kwargs
            module_info.module_cls(*args, **kwargs)


instantiate_device_type_tests(TestModuleDemo, globals())

if __name__ == "__main__":
    run_tests()
