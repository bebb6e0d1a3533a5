// A job record's checkpoint promise, as job_submit/preempt stored it: read by the watcher
// (job_submit/preempt) and by preempt/quota, which gives a victim the grace it was promised.
#pragma once

#include <optional>

#include "checkpoint.hpp"

struct job_record;
typedef struct job_record job_record_t;

namespace sp {

// The job's checkpoint promise, when job_submit gave it one (its warn signal is the private
// preemption trigger and its SPANK environment holds the encoded promise). Reads fields only.
std::optional<JobCheckpoint> promise_of(const job_record_t& job);

// Whether the job holds a promise, from its warn signal alone (no decoding): what a walk of
// the whole job list may ask of every job.
bool may_hold_promise(const job_record_t& job);

}  // namespace sp
