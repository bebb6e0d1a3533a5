// The plugin's command-line options, for sbatch, salloc and srun (and registered in slurmstepd
// too, where spank_option_getopt() reads them):
//   --checkpoint-signal=SIG[@SECONDS]   the signal that asks the job to checkpoint
//   --checkpoint-dir=PATH               created for the job, exported to every task
// A bad value stops the command with one line saying what is wrong (lib/checkpoint.hpp words
// it); the controller checks the rest (the grace against the QOS) at submission.
#pragma once

extern "C" {
#include <slurm/spank.h>
}

namespace sp::spank {

int register_options(spank_t sp);
struct spank_option* signal_option();
struct spank_option* dir_option();

}  // namespace sp::spank
