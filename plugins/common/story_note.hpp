// The job's story, as the controller plugins write it: one "slurm-preempt: NOTE;" appended
// per event to the job's AdminComment, after whatever is there (the notes are read back by
// lib/story's codec, which skips text that is not ours). The caller holds the job write lock.
#pragma once

#include <string>

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/slurmctld/slurmctld.h"
}

namespace sp {

void add_story_note(job_record_t& job, const std::string& note);

}  // namespace sp
