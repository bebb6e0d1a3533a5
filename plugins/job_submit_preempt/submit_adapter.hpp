// Translation layer of job_submit/preempt: job_desc_msg_t -> sp::SubmitView, and an
// sp::SubmitDecision -> changes to job_desc_msg_t and the user's one-line error. Nothing here
// decides anything; lib/decide.cpp does.
#pragma once

#include <cstdint>

#include "decide.hpp"
#include "job_view.hpp"
#include "log.hpp"

extern "C" {
#include <slurm/slurm.h>
}

namespace sp {

SubmitView view_of(const job_desc_msg_t& desc, uint32_t submit_uid);

// Applies the decision. Returns SLURM_SUCCESS, or an error code with *err_msg set (xstrdup'd,
// Slurm frees it) for a rejection. Every change is logged and noted in the job's AdminComment.
int apply(const SubmitDecision& decision, job_desc_msg_t& desc, char** err_msg, LogSink& log);

}  // namespace sp
