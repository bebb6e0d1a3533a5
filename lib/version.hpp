#pragma once

namespace sp {
// The suite's version, logged by every plugin when it loads.
inline constexpr const char* kVersion = "0.1.0";
}  // namespace sp
