// The watcher's translation layer: a job_record_t as the plain view lib/watcher.hpp decides on.
// Reads fields only (no slurmctld function), so unit tests build job records by hand.
#pragma once

#include <optional>

#include "checkpoint.hpp"
#include "job_promise.hpp"
#include "story_field.hpp"
#include "watch.hpp"

struct job_record;
typedef struct job_record job_record_t;

namespace sp {

// How a preemption ends the job's run, from slurm_job_preempt_mode() and slurm.conf's
// PreemptMode (slurmctld's, asked by the caller).
struct PreemptEnd {
  bool requeues = false;  // a running job whose preempt mode is REQUEUE
  bool suspends = false;  // preemption_suspends (job_state.hpp): no grace, whatever preempt_time
};

// `promise`: promise_of(job) or nullptr; `field`: where the policy keeps the story (its pause
// and finished marks).
WatchedJob watched_job(const job_record_t& job, const JobCheckpoint* promise, PreemptEnd end,
                       StoryField field);

// What the watcher's periodic scan reads of every job: fields only, nothing decoded.
// `preemption_suspends` as PreemptEnd::suspends.
ScanFacts scan_facts(const job_record_t& job, bool preemption_suspends);

}  // namespace sp
