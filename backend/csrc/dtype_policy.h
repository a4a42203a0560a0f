// The deny-list of dtypes a spyre tensor may not hold. Empty by default; the
// simulator sets the policy (e.g. float64) through _C._set_unsupported_dtypes.
#pragma once
#include <c10/core/ScalarType.h>

#include <vector>

namespace spyre {

void set_unsupported_dtypes(const std::vector<c10::ScalarType>& dtypes);
std::vector<c10::ScalarType> unsupported_dtypes();
// Raises "Spyre backend does not support dtype Double" for a denied dtype.
void check_dtype_supported(c10::ScalarType dtype);

} // namespace spyre
