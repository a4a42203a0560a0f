// Dispatch key names (demo excerpt).
#include <c10/core/DispatchKey.h>

namespace c10 {
const char* toString(BackendComponent t) {
  switch (t) {
    case BackendComponent::CPUBit: return "CPUBit";
    case BackendComponent::PrivateUse1Bit: return "PrivateUse1Bit";
    default: return "UNKNOWN_BACKEND_BIT";
  }
}
} // namespace c10
