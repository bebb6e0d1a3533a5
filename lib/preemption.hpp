// Rules of preemption that the controller applies to live jobs: timing, and why a job was
// preempted. Pure.
#pragma once

#include <cstdint>
#include <string_view>

#include "policy.hpp"

namespace sp {

// Should a pending job requeued at `requeued_at`, held by Slurm until `begin_time`, become
// eligible at `now`? Slurm holds a requeued job cred_lifetime + 1 s so that the next launch
// credential is newer than the revoke and the old run's I/O is gone from its nodes; once the
// old run has finished completing and 2 s have passed, both hold. A begin_time that is not
// Slurm's requeue hold (a --begin of the user's or an admin's) is never released.
bool release_requeue_hold(int64_t requeued_at, int64_t begin_time, int64_t cred_lifetime,
                          bool still_completing, int64_t now);
// Whether begin_time is Slurm's requeue hold of a job requeued at `requeued_at` and not over
// at `now` (release_requeue_hold may release it once the old run has left its nodes).
bool in_requeue_hold(int64_t requeued_at, int64_t begin_time, int64_t cred_lifetime, int64_t now);

// Why a job of (victim_qos, victim_account) was preempted by one of (by_qos, by_account), by
// the policy's rules, for the story and the report:
//   "owner reclaim"  the preemptor is an owner group's job, in one of the group's partitions
//                    or under the group's QOS;
//   "class"          (quotas) a higher priority class of the same project;
//   "quota reclaim"  (quotas) a project with a quota took back GPUs another project borrowed;
//   "qos"            Slurm's QOS Preempt list (standby under normal, ...).
// "" when the preemptor is not known (empty QOS and account). Names compare as Slurm does.
struct PreemptionParties {
  std::string_view by_qos, by_account, by_partition;  // the preemptor (the partition it runs in)
  std::string_view victim_qos, victim_account;
};
std::string_view preemption_reason(const Policy& p, const PreemptionParties& who);

}  // namespace sp
