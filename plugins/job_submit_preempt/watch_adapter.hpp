// The watcher's translation layer: a job_record_t as the plain view lib/watcher.hpp decides on.
// Reads fields only (no slurmctld function), so unit tests build job records by hand.
#pragma once

#include <optional>

#include "checkpoint.hpp"
#include "watch.hpp"

struct job_record;
typedef struct job_record job_record_t;

namespace sp {

// The job's checkpoint promise, when job_submit gave it one (its warn signal is the private
// preemption trigger and its SPANK environment holds the encoded promise).
std::optional<JobCheckpoint> promise_of(const job_record_t& job);

// `promise`: promise_of(job) or nullptr; `preempt_requeues`: slurm_job_preempt_mode() is
// REQUEUE (a slurmctld function, asked by the caller).
WatchedJob watched_job(const job_record_t& job, const JobCheckpoint* promise,
                       bool preempt_requeues);

}  // namespace sp
