#include "watch_adapter.hpp"

#include <string_view>

#include "job_state.hpp"
#include "pause.hpp"
#include "story_slot.hpp"
#include <sys/wait.h>

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/slurmctld/slurmctld.h"
}

namespace sp {

ScanFacts scan_facts(const job_record_t& job, bool preemption_suspends) {
  ScanFacts f;
  const job_record_t* jp = &job;
  f.managed = may_hold_promise(job);
  if (IS_JOB_PENDING(jp)) {
    f.state = WatchedJob::State::Pending;
  } else if (IS_JOB_RUNNING(jp)) {
    f.state = WatchedJob::State::Running;
  } else {
    f.state = WatchedJob::State::Other;  // the scan needs no finer state
  }
  f.preempt = grace_preempt_time(job.preempt_time, preemption_suspends);
  f.restarts = job.restart_cnt;
  f.has_details = job.details != nullptr;
  if (f.has_details) {
    f.submit = job.details->submit_time;
    f.begin = job.details->begin_time;
  }
  f.time_limited = job.time_limit != INFINITE;
  f.start = job.start_time;
  f.suspended = IS_JOB_SUSPENDED(jp);
  f.completing = IS_JOB_COMPLETING(jp);
  return f;
}

WatchedJob watched_job(const job_record_t& job, const JobCheckpoint* promise, PreemptEnd end,
                       StoryField field) {
  WatchedJob w;
  const job_record_t* jp = &job;
  w.id = job.job_id;
  if (IS_JOB_PENDING(jp)) {
    w.state = WatchedJob::State::Pending;
  } else if (IS_JOB_RUNNING(jp)) {
    w.state = WatchedJob::State::Running;
  } else if (ended_by_itself(job.job_state)) {
    w.state = WatchedJob::State::Exited;
  }
  w.completing = IS_JOB_COMPLETING(jp);
  w.requeue_in_hand = (job.job_state & JOB_REQUEUE) != 0;
  w.promise = promise;
  w.start = job.start_time;
  w.end = job.end_time;
  w.preempt = grace_preempt_time(job.preempt_time, end.suspends);
  w.restarts = job.restart_cnt;
  w.time_limited = job.time_limit != INFINITE;
  w.time_limit = w.time_limited ? job.time_limit : 0;
  w.suspended = IS_JOB_SUSPENDED(jp);
  w.has_details = job.details != nullptr;
  w.preempt_requeues = end.requeues && w.has_details && job.details->requeue;
  w.can_requeue = job.batch_flag != 0 && w.has_details && job.details->requeue;
  w.het = job.het_job_id != 0;
  if (w.has_details) {
    w.submit = job.details->submit_time;
    w.begin = job.details->begin_time;
  }
  const int status = static_cast<int>(job.exit_code);
  w.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (const char* story = story_text(job, field)) {
    const PauseMark m = last_pause_mark(story);
    w.paused = m.paused && m.running && m.at != 0 && job.start_time != 0 && m.at >= job.start_time;
    w.paused_by_admin = w.paused && m.admin;
    if (w.paused) w.pause_note = last_pause_note(story);
    const int64_t finished = last_finished_at(story);
    w.said_finished = finished != 0 && job.start_time != 0 && finished >= job.start_time;
  }
  return w;
}

}  // namespace sp
