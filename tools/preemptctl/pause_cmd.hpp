// preemptctl pause / resume: a client of slurmctld, which decides (job_submit/preempt's
// job_modify, lib/pause.hpp); this only names the jobs, sends the requests and waits.
#pragma once

namespace sp::tool {

// argv after the command word. Returns the exit status: 0 only when every named job reached
// the asked state (paused: pending and held; resumed: released).
int pause_command(bool resume, int argc, char** argv);

}  // namespace sp::tool
