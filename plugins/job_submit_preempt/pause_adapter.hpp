// job_modify's translation layer for pause and resume (lib/pause.hpp): the job record as a
// PauseJobView, whether an update names a whole array, and the Slurm error a refusal returns.
// Reads fields only (no slurmctld function), so unit tests build job records by hand; the
// entry point (job_submit_preempt.cpp) asks Slurm who the requester is and applies.
#pragma once

#include <cstdint>

#include "checkpoint.hpp"
#include "pause.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/slurmctld/slurmctld.h"
}

namespace sp {

// `promise`: promise_of(job) or nullptr.
PauseJobView pause_view_of(const job_record_t& job, const JobCheckpoint* promise);

// The update names an array as a whole ("123" for an array job or task): Slurm runs job_modify
// once per task with one update whose comment only the first task sees, so a pause request must
// name tasks one by one (preemptctl does).
bool names_whole_array(const job_desc_msg_t& desc, const job_record_t& job);

// What job_modify returns for a refusal (22.05 gives job_modify no message channel: the user
// sees this error's text, preemptctl maps it back to pause_error_text()).
int pause_error_code(PauseError e);

}  // namespace sp
