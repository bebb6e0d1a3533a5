// Accounting bookkeeping Slurm expects from a priority plugin, kept apart from the
// translation layer because it takes the association manager's locks.
#pragma once

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/slurmctld/slurmctld.h"
}

namespace sp {

// Returns the unused part of the job's reserved TRES-run-seconds to its QOS and association
// chain (what every priority plugin must do at job end so GrpTRESRunMins limits stay right).
void release_unused_tres_run_secs(job_record_t& job);

}  // namespace sp
