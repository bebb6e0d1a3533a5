// job_modify's translation layer for pause and resume (lib/pause.hpp): the job record as a
// PauseJobView, whether an update names a whole array, and the Slurm error a refusal returns.
// Reads fields only (no slurmctld function), so unit tests build job records by hand; the
// entry point (job_submit_preempt.cpp) asks Slurm who the requester is and applies.
#pragma once

#include <cstdint>
#include <string_view>

#include "checkpoint.hpp"
#include "pause.hpp"
#include "story_field.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/slurmctld/slurmctld.h"
}

namespace sp {

// `promise`: promise_of(job) or nullptr.
PauseJobView pause_view_of(const job_record_t& job, const JobCheckpoint* promise, StoryField field);

// The update names more than one record of an array: "123" (the whole array), or a task range
// ("123_[1-3]") that is not the one record holding those pending tasks. Slurm runs job_modify
// once per record with one update, whose request job_modify takes out at the first: a pause
// request names records one by one (preemptctl does: "123_4", or "123_[13-1000]" for the
// pending tasks Slurm keeps in one record).
bool names_whole_array(const job_desc_msg_t& desc, const job_record_t& job);

// The name of `uid` in `users`, assoc_mgr's user list (slurmdb_user_rec_t), or "" if none is
// there. The caller holds assoc_mgr's user read lock for as long as it uses the answer.
std::string_view user_name_in(List users, uint32_t uid);

// What job_modify returns for a refusal (22.05 gives job_modify no message channel: the user
// sees this error's text, preemptctl maps it back to pause_error_text()).
int pause_error_code(PauseError e);

}  // namespace sp
