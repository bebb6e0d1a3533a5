// A job record's state as the slurmctld plugins read it, in one place.
#pragma once

#include <cstdint>

extern "C" {
#include <slurm/slurm.h>
}

namespace sp {

// The run ended by itself (its script exited, its memory or time ran out): completed, failed,
// out of memory or timed out; not cancelled, preempted, requeued or lost with a node.
inline bool ended_by_itself(uint32_t job_state) {
  const uint32_t base = job_state & JOB_STATE_BASE;
  return base == JOB_COMPLETE || base == JOB_FAILED || base == JOB_OOM || base == JOB_TIMEOUT;
}

}  // namespace sp
