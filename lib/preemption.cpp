#include "preemption.hpp"

namespace sp {

bool in_requeue_hold(int64_t requeued_at, int64_t begin_time, int64_t cred_lifetime, int64_t now) {
  const int64_t hold_end = requeued_at + cred_lifetime + 1;
  return begin_time >= hold_end - 1 && begin_time <= hold_end + 1 && begin_time > now;
}

bool release_requeue_hold(int64_t requeued_at, int64_t begin_time, int64_t cred_lifetime,
                          bool still_completing, int64_t now) {
  return in_requeue_hold(requeued_at, begin_time, cred_lifetime, now) && !still_completing &&
         now >= requeued_at + 2;
}

}  // namespace sp
