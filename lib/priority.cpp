#include "priority.hpp"

namespace sp {

uint32_t fifo_priority(uint32_t last_prio, int64_t nice) {
  int64_t prio = last_prio >= 2 ? static_cast<int64_t>(last_prio) - 1 : 1;
  if (nice <= 0 || prio > nice + 1) prio -= nice;
  if (prio < 1) prio = 1;
  if (prio > UINT32_MAX - 1) prio = UINT32_MAX - 1;
  return static_cast<uint32_t>(prio);
}

}  // namespace sp

#include <cmath>

namespace sp {

double fairshare_factor(long double usage_efctv, long double shares_norm) {
  if (!(shares_norm > 0.0L) || !std::isfinite(static_cast<double>(shares_norm)) ||
      !std::isfinite(static_cast<double>(usage_efctv))) {
    return 0.0;
  }
  return std::pow(2.0, -static_cast<double>(usage_efctv / shares_norm));
}

}  // namespace sp
