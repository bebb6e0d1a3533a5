#include "priority_adapter.hpp"

namespace sp {

int64_t nice_of(const job_record_t& job) {
  if (job.details == nullptr) return 0;
  return static_cast<int64_t>(job.details->nice) - NICE_OFFSET;
}

}  // namespace sp
