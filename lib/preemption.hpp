// Timing rules of preemption that the controller applies to live jobs. Pure.
#pragma once

#include <cstdint>

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

}  // namespace sp
