#include "watcher.hpp"

#include "ctld_policy.hpp"
#include "preemption.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <string>

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/common/list.h"
#include "src/common/slurm_cred.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/preempt.h"
#include "src/slurmctld/slurmctld.h"
}

namespace sp {

PreemptionWatcher::PreemptionWatcher(LogSink& log, const Clock& clock,
                                     std::shared_ptr<const Policy> policy)
    : log_(log),
      clock_(clock),
      policy_to_check_(std::move(policy)),
      thread_(
          log, "preemption watcher", [this] { return until_next_tick(); }, [this] { tick(); }) {}

std::chrono::milliseconds PreemptionWatcher::until_next_tick() const {
  using std::chrono::milliseconds;
  const int64_t next = next_grace_end_.load();
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const int64_t now_ms = std::chrono::duration_cast<milliseconds>(now).count();
  int64_t wait_ms = 1000;
  if (next > 0) wait_ms = std::min<int64_t>(wait_ms, next * 1000 - now_ms + 5);  // just past it
  return milliseconds(std::max<int64_t>(wait_ms, 50));
}

void PreemptionWatcher::tick() {
  if (job_list == nullptr) return;  // slurmctld has not loaded its state yet
  int cred_lifetime = 1200;
  (void)slurm_cred_ctx_get(slurmctld_config.cred_ctx, SLURM_CRED_OPT_EXPIRY_WINDOW, &cred_lifetime);
  // The locks slurmctld's own periodic job_time_limit() pass takes.
  slurmctld_lock_t locks = {READ_LOCK, WRITE_LOCK, WRITE_LOCK, READ_LOCK, READ_LOCK};
  lock_slurmctld(locks);
  const time_t now = static_cast<time_t>(clock_.now());
  if (policy_to_check_) {
    if (const std::string problem = slurm_config_problem(*policy_to_check_); !problem.empty()) {
      log_.log_error("the policy names what Slurm does not know: " + problem);
    }
    policy_to_check_.reset();
  }
  bool changed = false;
  time_t next_grace_end = 0;
  ListIterator it = list_iterator_create(job_list);
  while (auto* job = static_cast<job_record_t*>(list_next(it))) {
    if (IS_JOB_RUNNING(job) && job->preempt_time && job->end_time > now &&
        (next_grace_end == 0 || job->end_time < next_grace_end)) {
      next_grace_end = job->end_time;
    }
    if (IS_JOB_RUNNING(job) && job->preempt_time && job->end_time <= now) {
      const long late = static_cast<long>(now - job->end_time);
      log_.log_info("grace of JobId=" + std::to_string(job->job_id) + " ended " +
                    std::to_string(late) + " s ago: killing its processes and preempting it now");
      // The grace was the warning: kill the processes outright (without changing the job's
      // state) before Slurm's requeue/cancel, which would otherwise send TERM once more and
      // wait KillWait (30 s by default) for a job that already ignored its warning.
      (void)job_signal(job, SIGKILL, KILL_STEPS_ONLY, 0, false);
      if (job->batch_flag) (void)job_signal(job, SIGKILL, KILL_JOB_BATCH, 0, false);
      (void)slurm_job_preempt(job, nullptr, slurm_job_preempt_mode(job), false);
      changed = true;
    } else if (IS_JOB_PENDING(job) && job->restart_cnt > 0 && job->details &&
               release_requeue_hold(job->details->submit_time, job->details->begin_time,
                                    cred_lifetime, IS_JOB_COMPLETING(job), now)) {
      log_.log_info("requeued JobId=" + std::to_string(job->job_id) +
                    " is eligible now that its nodes are free, not in " +
                    std::to_string(static_cast<long>(job->details->begin_time - now)) + " s");
      job->details->begin_time = now;
      job->state_reason = WAIT_NO_REASON;
      changed = true;
    }
  }
  list_iterator_destroy(it);
  next_grace_end_.store(static_cast<int64_t>(next_grace_end));
  if (changed) last_job_update = now;
  unlock_slurmctld(locks);
  if (changed) queue_job_scheduler();
}

}  // namespace sp
