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

// A preemption of the job suspends it: its preempt mode (slurm_job_preempt_mode, `job_mode`)
// is SUSPEND and slurm.conf's PreemptMode (`conf_mode`) has GANG (node_scheduler.c: the gang
// scheduler suspends it; without GANG, Slurm cancels it). Compared as Slurm does, flags and
// all: preempt/partition_prio leaves WITHIN in a partition's SUSPEND,WITHIN, and Slurm takes
// that for a mode with a grace (slurm_job_preempt).
inline bool preemption_suspends(uint16_t job_mode, uint16_t conf_mode) {
  return job_mode == PREEMPT_MODE_SUSPEND && (conf_mode & PREEMPT_MODE_GANG) != 0;
}

}  // namespace sp
