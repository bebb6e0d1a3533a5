// A job record as the quota rules see it (lib/quota.hpp): its project, class, GPUs and
// whether its quota counts where it runs. Shared by preempt/quota and priority/fairshare.
// Callers hold the job lock (read at least).
#pragma once

#include <cstdint>

#include "policy.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/slurmctld/slurmctld.h"
}

namespace sp {

// GPUs of a job: allocated when it runs, requested when it waits (`gpu_pos`: the gres/gpu
// TRES position, -1 when the cluster does not track GPUs).
uint64_t job_gpus(const job_record_t& job, int gpu_pos);
// Index of the job's account in Policy::quotas; -1 without one (or a policy without quotas).
int job_project(const Policy& policy, const job_record_t& job);
// Whether the job's partition is one its project's quota counts.
bool job_counted(const Policy& policy, int project, const job_record_t& job);
// Index of the job's QOS in Policy::classes; -1 when it is not a class.
int job_class(const Policy& policy, const job_record_t& job);

}  // namespace sp
