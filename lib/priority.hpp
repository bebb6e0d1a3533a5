// Priority arithmetic for priority/fairshare. Pure; the plugin adapts job_record_t.
#pragma once

#include <cstdint>

namespace sp {

// First-come first-served with nice: each new job gets one less than the last one, shifted by
// the job's nice value (nice = Slurm's nice minus NICE_OFFSET), never below 1 (0 is a hold).
// This is the foundation's ordering; the fair-share formula replaces it.
uint32_t fifo_priority(uint32_t last_prio, int64_t nice);

}  // namespace sp

namespace sp {

// Slurm's fair-share factor 2^(-usage/shares); 0 when shares are zero or unknown.
double fairshare_factor(long double usage_efctv, long double shares_norm);

}  // namespace sp
