#include "watcher.hpp"

#include "checkpoint.hpp"
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
#include "src/common/slurm_accounting_storage.h"
#include "src/common/slurm_cred.h"
#include "src/common/hostlist.h"
#include "src/common/node_conf.h"
#include "src/common/xstring.h"
#include "src/slurmctld/agent.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/preempt.h"
#include "src/slurmctld/slurmctld.h"
}

namespace sp {
namespace {

// The job's checkpoint promise, when job_submit gave it one.
std::optional<JobCheckpoint> promise_of(const job_record_t& job) {
  if (job.warn_signal != kTriggerPreempt || job.spank_job_env == nullptr) return std::nullopt;
  for (uint32_t i = 0; i < job.spank_job_env_size && job.spank_job_env[i]; ++i) {
    const std::string_view e(job.spank_job_env[i]);
    if (e.size() > kControlEnvName.size() && e.starts_with(kControlEnvName) &&
        e[kControlEnvName.size()] == '=') {
      return decode_checkpoint(e.substr(kControlEnvName.size() + 1));
    }
  }
  return std::nullopt;
}

// Sends `signo` to every step of the job but the extern one (whose placeholder process does not
// ignore it) and, unless `with_batch`, the batch step. Asynchronous: Slurm's agent sends it.
void signal_steps(job_record_t& job, int signo, bool with_batch) {
  if (job.step_list == nullptr) return;
  ListIterator it = list_iterator_create(job.step_list);
  while (auto* step = static_cast<step_record_t*>(list_next(it))) {
    const uint32_t id = step->step_id.step_id;
    if (id == SLURM_EXTERN_CONT || (id == SLURM_BATCH_SCRIPT && !with_batch)) continue;
    slurm_step_id_t step_id = step->step_id;
    (void)job_step_signal(&step_id, static_cast<uint16_t>(signo), 0, slurm_conf.slurm_user_id);
  }
  list_iterator_destroy(it);
}

// The job whose preemption of others began in [from, to]: the victim's preemptor. It may be
// pending, running, or even done already when the victim left early.
const job_record_t* preemptor_of(const job_record_t& victim, time_t from, time_t to) {
  const job_record_t* best = nullptr;
  ListIterator it = list_iterator_create(job_list);
  while (auto* j = static_cast<job_record_t*>(list_next(it))) {
    if (j == &victim || j->details == nullptr) continue;
    const time_t t = j->details->preempt_start_time;
    if (t == 0 || t < from || t > to) continue;
    if (best == nullptr || j->priority > best->priority) best = j;
  }
  list_iterator_destroy(it);
  return best;
}

// The note for a preemption that began at `at`, by `by` (nullptr: not found).
std::string preempted_note(time_t at, const job_record_t* by, const JobCheckpoint& promise) {
  return note_preempted(at, by ? by->job_id : 0,
                        by && by->qos_ptr && by->qos_ptr->name ? by->qos_ptr->name : "",
                        by && by->account ? by->account : "", promise);
}

std::string preempted_note(const job_record_t& job, const JobCheckpoint& promise) {
  return preempted_note(job.preempt_time,
                        preemptor_of(job, job.preempt_time - 2, job.preempt_time + 2), promise);
}

void add_note(job_record_t& job, const std::string& note) {
  if (job.admin_comment && *job.admin_comment) {
    xstrfmtcat(job.admin_comment, " slurm-preempt: %s;", note.c_str());
  } else {
    xfree(job.admin_comment);
    job.admin_comment = xstrdup_printf("slurm-preempt: %s;", note.c_str());
  }
}

}  // namespace

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
  std::map<uint32_t, Run> runs;  // this tick's managed runs; replaces runs_ at the end
  ListIterator it = list_iterator_create(job_list);
  while (auto* job = static_cast<job_record_t*>(list_next(it))) {
    const auto promise = promise_of(*job);
    Run* run = nullptr;
    if (promise) {
      auto old = runs_.find(job->job_id);
      if (IS_JOB_RUNNING(job)) {
        Run& r = runs[job->job_id];
        if (old != runs_.end() && old->second.start == job->start_time) r = old->second;
        r.start = job->start_time;
        r.restart = job->restart_cnt;
        run = &r;
      } else if (old != runs_.end() && !old->second.killed &&
                 (old->second.preempt_triggered || job->preempt_time ||
                  (IS_JOB_PENDING(job) && job->restart_cnt > old->second.restart))) {
        // Preempted, and gone from RUNNING: perhaps before this thread saw the grace start
        // (the batch shell got Slurm's own trigger and saved at once).
        changed |= settle_ended_run(*job, *promise, old->second, now);
      }
    }
    if (run != nullptr && job->preempt_time && !run->preempt_triggered) {
      trigger_preemption(*job, *promise, now);
      run->preempt_triggered = true;
      run->grace_end = job->end_time;
      changed = true;
    }
    if (run != nullptr && !job->preempt_time && !run->time_limit_triggered && promise->lead_s > 0 &&
        job->time_limit != INFINITE && job->end_time - promise->lead_s <= now) {
      log_.log_info("JobId=" + std::to_string(job->job_id) + " ends in " +
                    std::to_string(static_cast<long>(job->end_time - now)) +
                    " s: sending it its time-limit checkpoint signal");
      signal_steps(*job, kTriggerTimeLimit, true);
      run->time_limit_triggered = true;
    }
    if (IS_JOB_RUNNING(job) && job->preempt_time && job->end_time > now &&
        (next_grace_end == 0 || job->end_time < next_grace_end)) {
      next_grace_end = job->end_time;
    }
    if (IS_JOB_RUNNING(job) && job->preempt_time && job->end_time <= now) {
      const long late = static_cast<long>(now - job->end_time);
      log_.log_info("grace of JobId=" + std::to_string(job->job_id) + " ended " +
                    std::to_string(late) + " s ago: killing its processes and preempting it now");
      if (promise) {
        const bool requeue = slurm_job_preempt_mode(job) == PREEMPT_MODE_REQUEUE && job->details &&
                             job->details->requeue;
        add_note(*job, note_killed_at_grace_end(now, requeue, job->restart_cnt + 1));
        if (run != nullptr) run->killed = true;
      }
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
      // Its priority now, not at the next recalculation: sprio lists it from this moment, and
      // its age restarted with the requeue. (Priority 0 is a hold: left alone.)
      if (job->priority != 0) set_job_prio(job);
      changed = true;
    }
  }
  runs_ = std::move(runs);
  list_iterator_destroy(it);
  for (auto d = draining_.begin(); d != draining_.end();) {
    const job_record_t* job = find_job_record(d->first);
    if (job == nullptr || !IS_JOB_COMPLETING(job)) {
      d = draining_.erase(d);
    } else if (d->second <= now) {
      log_.log_info("JobId=" + std::to_string(job->job_id) +
                    " requeued itself during its grace and its processes outlived it: killing "
                    "them so that its nodes go to the preemptor");
      kill_lingering(*job);
      d = draining_.erase(d);
    } else {
      if (next_grace_end == 0 || d->second < next_grace_end) next_grace_end = d->second;
      ++d;
    }
  }
  next_grace_end_.store(static_cast<int64_t>(next_grace_end));
  if (changed) last_job_update = now;
  unlock_slurmctld(locks);
  if (changed) queue_job_scheduler();
}

}  // namespace sp

namespace sp {

void PreemptionWatcher::trigger_preemption(job_record_t& job, const JobCheckpoint& promise,
                                           time_t now) {
  // The job may have asked for less than its QOS grace: its nodes come back sooner.
  if (promise.grace_s >= 0 && job.end_time > job.preempt_time + promise.grace_s) {
    job.end_time = job.preempt_time + promise.grace_s;
  }
  // Slurm sent the trigger to the batch shell's process group at grace start; the other steps
  // get it now (Slurm can only signal all of them, the extern step included, or none).
  signal_steps(job, kTriggerPreempt, false);
  const std::string note = preempted_note(job, promise);
  add_note(job, note);
  log_.log_info("JobId=" + std::to_string(job.job_id) + " " + note + "; " +
                std::to_string(static_cast<long>(job.end_time - now)) + " s left");
}

bool PreemptionWatcher::settle_ended_run(job_record_t& job, const JobCheckpoint& promise,
                                         const Run& run, time_t now) {
  job_record_t* const jp = &job;
  if (!run.preempt_triggered && job.preempt_time) add_note(job, preempted_note(job, promise));
  if (IS_JOB_PENDING(jp) && job.restart_cnt > run.restart) {
    if (!run.preempt_triggered) {
      // Requeued (which clears preempt_time) before this thread saw the grace start, as a
      // batch trap running `scontrol requeue` at once does: a preemptor that began within
      // the last seconds is the one.
      const job_record_t* by = preemptor_of(job, now - 3, now);
      if (by == nullptr) {
        log_.log_info("JobId=" + std::to_string(job.job_id) +
                      " requeued itself with no preemption under way");
        return false;
      }
      add_note(job, preempted_note(by->details->preempt_start_time, by, promise));
    }
    add_note(job, note_requeued_by_job(job.restart_cnt));
    log_.log_info("JobId=" + std::to_string(job.job_id) + " was requeued during its grace");
    const int64_t grace_end = run.preempt_triggered ? run.grace_end : now + promise.grace_s;
    if (IS_JOB_COMPLETING(jp) && grace_end > 0) draining_[job.job_id] = grace_end;
    return true;
  }
  const uint32_t base = job.job_state & JOB_STATE_BASE;
  const bool exited =
      base == JOB_COMPLETE || base == JOB_FAILED || base == JOB_OOM || base == JOB_TIMEOUT;
  if (!exited || (job.job_state & JOB_REQUEUE)) return false;  // cancelled, or in hand
  const int status =
      WIFEXITED(job.exit_code) ? WEXITSTATUS(job.exit_code) : 128 + WTERMSIG(job.exit_code);
  const bool can_requeue = promise.requeue && job.batch_flag && job.details && job.details->requeue;
  if (!can_requeue) {
    add_note(job, note_exited_in_grace(now, status, false, 0));
    jobacct_storage_g_job_complete(acct_db_conn, &job);
    return true;
  }
  add_note(job, note_exited_in_grace(now, status, true, job.restart_cnt + 1));
  const int rc = job_requeue(0, job.job_id, nullptr, true, 0);
  log_.log_info("JobId=" + std::to_string(job.job_id) + " exited during its grace (exit " +
                std::to_string(status) + "): " +
                (rc == SLURM_SUCCESS ? std::string("requeued")
                                     : "requeue failed: " + std::string(slurm_strerror(rc))));
  return true;
}

namespace {

// What job_signal() sends a running job's nodes (job_mgr.c _signal_job), which it refuses for
// a job that is no longer running. slurmd signals, for KILL_STEPS_ONLY, every step but the
// batch one, and for KILL_FULL_JOB, the batch script's process group.
void queue_node_signal(const job_record_t& job, bitstr_t* nodes, int signo, uint16_t flags) {
  auto* msg = static_cast<signal_tasks_msg_t*>(xmalloc(sizeof(signal_tasks_msg_t)));
  msg->step_id.job_id = job.job_id;
  msg->step_id.step_id = slurm_conf.max_step_cnt + 1;  // no step: the flags say which
  msg->step_id.step_het_comp = NO_VAL;
  msg->flags = flags;
  msg->signal = static_cast<uint16_t>(signo);
  auto* agent = static_cast<agent_arg_t*>(xmalloc(sizeof(agent_arg_t)));
  agent->msg_type = REQUEST_SIGNAL_TASKS;
  agent->retry = 1;
  agent->hostlist = hostlist_create(nullptr);
  agent->protocol_version = SLURM_PROTOCOL_VERSION;
  for (int i = 0; i < node_record_count; ++i) {
    if (!bit_test(nodes, i) || node_record_table_ptr[i] == nullptr) continue;
    agent->protocol_version =
        std::min(agent->protocol_version, node_record_table_ptr[i]->protocol_version);
    hostlist_push_host(agent->hostlist, node_record_table_ptr[i]->name);
    agent->node_count++;
  }
  if (agent->node_count == 0) {
    hostlist_destroy(agent->hostlist);
    xfree(msg);
    xfree(agent);
    return;
  }
  agent->msg_args = msg;
  set_agent_arg_r_uid(agent, SLURM_AUTH_UID_ANY);
  agent_queue_request(agent);
}

}  // namespace

void PreemptionWatcher::kill_lingering(const job_record_t& job) const {
  bitstr_t* nodes = job.node_bitmap_cg ? job.node_bitmap_cg : job.node_bitmap;
  if (nodes == nullptr) return;
  queue_node_signal(job, nodes, SIGKILL, KILL_STEPS_ONLY);
  if (job.batch_flag) queue_node_signal(job, nodes, SIGKILL, KILL_FULL_JOB);
}

}  // namespace sp
