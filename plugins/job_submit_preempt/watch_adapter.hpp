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

// `promise`: promise_of(job) or nullptr; `preempt_requeues`: slurm_job_preempt_mode() is
// REQUEUE (a slurmctld function, asked by the caller); `field`: where the policy keeps the
// story (its pause and finished marks).
WatchedJob watched_job(const job_record_t& job, const JobCheckpoint* promise, bool preempt_requeues,
                       StoryField field);

// What the watcher's periodic scan reads of every job: fields only, nothing decoded.
ScanFacts scan_facts(const job_record_t& job);

}  // namespace sp
