// Accounting bookkeeping Slurm expects from a priority plugin: giving back the TRES-run-seconds
// Slurm reserves for GrpTRESRunMins (run_secs_to_release() in lib/priority.hpp says how much).
#pragma once

#include <cstdint>

#include "priority.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/slurmctld/slurmctld.h"
}

namespace sp {

// The job's start, time limit and QOS UsageFactor, for run_secs_to_release().
RunSecsJob run_secs_job(const job_record_t& job);

// Gives back `secs` x each TRES count of the job from the reserved run-seconds of its QOS, its
// partition's QOS (when another) and its association chain, never below 0. Nothing unless
// AccountingStorageEnforce has limits (Slurm reserves nothing then). The caller holds
// assoc_mgr's assoc and QOS write locks.
void release_tres_run_secs(const job_record_t& job, uint64_t secs);

}  // namespace sp
