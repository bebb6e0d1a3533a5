#include "preemption.hpp"

namespace sp {

bool release_requeue_hold(int64_t requeued_at, int64_t begin_time, int64_t cred_lifetime,
                          bool still_completing, int64_t now) {
  const int64_t hold_end = requeued_at + cred_lifetime + 1;
  const bool is_requeue_hold = begin_time >= hold_end - 1 && begin_time <= hold_end + 1;
  return is_requeue_hold && !still_completing && begin_time > now && now >= requeued_at + 2;
}

}  // namespace sp
