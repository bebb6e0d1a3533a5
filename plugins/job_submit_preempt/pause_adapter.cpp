#include "pause_adapter.hpp"

#include <cstring>

#include "slurm_list.hpp"
#include "story_slot.hpp"

namespace sp {

PauseJobView pause_view_of(const job_record_t& job, const JobCheckpoint* promise,
                           StoryField field) {
  PauseJobView v;
  const job_record_t* jp = &job;
  if (IS_JOB_PENDING(jp)) {
    v.state = PauseJobView::State::Pending;
  } else if (IS_JOB_RUNNING(jp)) {
    v.state = PauseJobView::State::Running;
  } else if (IS_JOB_SUSPENDED(jp)) {
    v.state = PauseJobView::State::Suspended;
  }
  v.batch = job.batch_flag != 0;
  v.requeue = job.details != nullptr && job.details->requeue != 0;
  v.managed = promise != nullptr;
  v.promise_grace_s = promise != nullptr ? promise->grace_s : -1;
  v.held = job.priority == 0;
  // The holds Slurm lets the job's user release (job_mgr.c update priority): its own, and the
  // one a deleted reservation left.
  v.user_hold =
      v.held && (job.state_reason == WAIT_HELD_USER || job.state_reason == WAIT_RESV_DELETED);
  v.preempt = job.preempt_time;
  v.start = job.start_time;
  v.owner = job.user_id;
  v.het = job.het_job_id != 0;
  if (const char* story = story_text(job, field)) v.mark = last_pause_mark(story);
  return v;
}

bool names_whole_array(const job_desc_msg_t& desc, const job_record_t& job) {
  const bool in_array = job.array_recs != nullptr || job.array_task_id != NO_VAL;
  if (!in_array) return false;
  if (desc.job_id_str == nullptr || std::strchr(desc.job_id_str, '_') == nullptr) return true;
  // "123_[13-1000]": only the record that holds those pending tasks (preemptctl names it so);
  // a range over split task records would reach only the first of them.
  return std::strchr(desc.job_id_str, '[') != nullptr && job.array_recs == nullptr;
}

int pause_error_code(PauseError e) {
  switch (e) {
    case PauseError::None: return SLURM_SUCCESS;
    case PauseError::NotAllowed:
    case PauseError::AdminPause: return ESLURM_ACCESS_DENIED;
    case PauseError::Finished: return ESLURM_ALREADY_DONE;
    case PauseError::Interactive: return ESLURM_BATCH_ONLY;
    case PauseError::NoRequeue: return ESLURM_DISABLED;
    case PauseError::NoCheckpoint: return ESLURM_NOT_SUPPORTED;
    case PauseError::GraceTooLong: return ESLURM_INVALID_TIME_VALUE;
    case PauseError::BeingPreempted:
    case PauseError::StillPausing: return ESLURM_TRANSITION_STATE_NO_UPDATE;
    case PauseError::Suspended: return ESLURM_JOB_SUSPENDED;
    case PauseError::AdminHold: return ESLURM_JOB_HELD;
    case PauseError::NotPaused: return ESLURM_JOB_NOT_PENDING;
    case PauseError::NotRunning: return ESLURM_JOB_NOT_RUNNING;
    case PauseError::HetJob: return ESLURM_NOT_WHOLE_HET_JOB;
    case PauseError::PreemptCancels: return ESLURM_INVALID_QOS;
  }
  return SLURM_ERROR;
}

std::string_view user_name_in(List users, uint32_t uid) {
  std::string_view name;
  for_each_ro<slurmdb_user_rec_t>(users, [&](const slurmdb_user_rec_t* u) {
    if (u->uid != uid || u->name == nullptr) return true;
    name = u->name;
    return false;  // found: stop the walk
  });
  return name;
}

}  // namespace sp
