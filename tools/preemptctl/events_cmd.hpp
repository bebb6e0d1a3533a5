// preemptctl events JOB [--json]: one job's story, run by run, from slurmdbd (sacct -D) and
// slurmctld (scontrol show job) and the notes the plugins write into AdminComment. This file
// only runs those commands; lib/story.hpp reads and merges what they print.
#pragma once

namespace sp::tool {

// argv after the command word. 0 when the story was printed; 1 when the job is unknown or
// slurmdbd does not answer; 2 for a bad argument. Never throws.
int events_command(int argc, char** argv);

}  // namespace sp::tool
