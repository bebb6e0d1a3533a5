// Translation layer of priority/fairshare: job_record_t -> the plain values lib/ computes on.
#pragma once

#include <cstdint>

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/slurmctld/slurmctld.h"
}

namespace sp {

// The job's nice value relative to Slurm's NICE_OFFSET (negative: higher priority).
int64_t nice_of(const job_record_t& job);

}  // namespace sp
