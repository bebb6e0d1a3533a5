#include "preemption.hpp"

#include <algorithm>

#include "text.hpp"

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

std::string_view preemption_reason(const Policy& p, const PreemptionParties& who) {
  if (who.by_qos.empty() && who.by_account.empty()) return {};
  if (const OwnerGroup* g = p.find_owner(who.by_account); g != nullptr) {
    const bool in_partition = std::find(g->partitions.begin(), g->partitions.end(),
                                        who.by_partition) != g->partitions.end();
    if (in_partition || same_name(g->qos, who.by_qos)) return "owner reclaim";
  }
  if (!p.quotas.empty()) {
    const PriorityClass* mine = p.find_class(who.by_qos);
    const PriorityClass* theirs = p.find_class(who.victim_qos);
    if (mine != nullptr && theirs != nullptr && same_name(who.by_account, who.victim_account) &&
        mine->priority > theirs->priority) {
      return "class";
    }
    if (p.find_quota(who.by_account) != nullptr && !same_name(who.by_account, who.victim_account)) {
      return "quota reclaim";
    }
  }
  return "qos";
}

}  // namespace sp
