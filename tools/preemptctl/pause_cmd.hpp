// preemptctl pause / resume: a client of slurmctld, which decides (job_submit/preempt's
// job_modify, lib/pause.hpp); this only names the jobs, sends the requests and waits.
#pragma once

namespace sp::tool {

// argv after the command word. Returns the exit status: 0 only when every named job reached
// the asked state (paused: pending and held; resumed: released).
int pause_command(bool resume, int argc, char** argv);

// preemptctl finished [JOB]: the job (default: $SLURM_JOB_ID, the job it runs in) says its
// work is done, so that an exit 0 during a preemption's or pause's grace ends it instead of
// requeueing it. 0 when slurmctld noted it, 1 when it refused, 2 for bad arguments.
int finished_command(int argc, char** argv);

}  // namespace sp::tool
