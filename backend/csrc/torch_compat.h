// The one place that knows how the supported torch releases' C++ APIs differ (docs/backend.md,
// "Supported torch versions"). Sources test the SPYRE_TORCH_* feature macros, never version
// numbers, so adding a release means updating this file and setup.py's SUPPORTED_TORCH.
#pragma once
#include <torch/headeronly/version.h>

#define SPYRE_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||        \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// torch 2.14 added the virtual c10::GeneratorImpl::philox_state (Philox reservations for kernels
// that draw random numbers themselves). A binary built against 2.14 needs that symbol at load time,
// which is why it does not load on 2.13 and the other way round.
#define SPYRE_TORCH_HAS_PHILOX_STATE SPYRE_TORCH_AT_LEAST(2, 14)
