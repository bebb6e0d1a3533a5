// Fault injection for the daemon-safety tests: a named point inside a region that holds Slurm's
// locks (or any other point) throws std::bad_alloc, as an allocation that failed there would.
// Armed only by the environment of the process that loaded the plugin:
//   SLURM_PREEMPT_FAULT_EVERY=N   every Nth fault point reached throws (N >= 1)
//   SLURM_PREEMPT_FAULT_ONLY=NAME only the point NAME counts (default: every point)
// Unarmed (the default at every site), a fault point is one predictable branch.
#pragma once

namespace sp {

// Throws std::bad_alloc when armed and due; otherwise nothing.
void fault_point(const char* name);

}  // namespace sp
