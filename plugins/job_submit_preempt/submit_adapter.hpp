// Translation layer of job_submit/preempt: job_desc_msg_t -> sp::SubmitView, and an
// sp::SubmitDecision -> changes to job_desc_msg_t and the user's one-line error. Nothing here
// decides anything; lib/decide.cpp does.
#pragma once

#include <cstdint>

#include "decide.hpp"
#include "job_view.hpp"
#include "log.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/slurmctld/slurmctld.h"
}

namespace sp {

// Removes every checkpoint promise a submission carries in its SPANK environment
// (kControlEnvName, and the SPANK_-prefixed form prolog and epilog scripts see): a user can
// put one there (the API, a client SPANK plugin, srun's SLURM_SPANK_* variables), and only
// job_submit/preempt may write it, in apply(). Returns how many were removed. The promise's
// variables in a batch job's environment (SLURM_CHECKPOINT_SIGNAL, ..._GRACE, ..._LEAD,
// ..._REQUEUE, ..._STEPS, ..._NOTICE; a job submitted from a managed job inherits them) go
// too, silently: apply() sets them again for a job that has a promise.
uint32_t strip_promise(job_desc_msg_t& desc);

SubmitView view_of(const job_desc_msg_t& desc, uint32_t submit_uid);

// The job as it would be after `scontrol update`: the update's fields where it sets them, the
// job's own elsewhere (but the time limit only when the update sets one). The caller holds
// the job lock.
SubmitView view_of_update(const job_desc_msg_t& update, const job_record_t& job);

// Whether an update touches what the policy rules on (QOS, partition, account, requeue, time).
bool update_touches_policy(const job_desc_msg_t& update);

// With quotas: why an update of `job` is refused, or empty. A job of a non-preemptible class
// holds its project's quota license (decide()), which only a submission sets: an update may
// not drop or forge it, move the job to another project or QOS, or change its GPUs; and no
// job becomes non-preemptible by an update (it would run outside the quota).
std::string quota_update_refusal(const Policy& policy, const job_desc_msg_t& update,
                                 const job_record_t& job);

// The Slurm error code for a refusal of this kind (ESLURM_INVALID_QOS, ...).
int error_code(SubmitDecision::RejectKind kind);

// Applies the decision. Returns SLURM_SUCCESS, or an error code with *err_msg set (xstrdup'd,
// Slurm frees it) for a rejection. Every change is logged and noted in the job's AdminComment.
// The checkpoint promise goes into the job's warn signal, environment and SPANK environment.
int apply(const SubmitDecision& decision, const Policy& policy, job_desc_msg_t& desc,
          char** err_msg, LogSink& log);

}  // namespace sp
