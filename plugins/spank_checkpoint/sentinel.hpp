// The sentinel: one small process per step and node of a managed job, started by the SPANK
// plugin from the step's first task just before it execs. It lives in the step (same process
// group, same container), so the private trigger signals Slurm sends to the step reach it,
// while every task ignores them. On a trigger it writes the notice file and delivers the
// job's checkpoint signal to the processes of the step that handle it (should_deliver() in
// lib/checkpoint.hpp). It runs as the job's user, never as root.
//
// Lifetime: it is slurmstepd's child (clone(CLONE_PARENT)), a sibling of the tasks, not the
// first task's child: it outlives any one task, so the other tasks of the step on this node
// keep their checkpoint signal when task 0 exits first. slurmstepd does not count it as a
// task (it waits only for the pids of its tasks), and once its last task has exited it kills
// every process left in the step's container, the sentinel with them: after the SPANK plugin
// has waited for a sentinel still adding a preemption's preemptor to the notice
// (wait_for_notices), so that a task that exits the moment it is signalled leaves a whole
// notice behind. Should slurmstepd itself die, the sentinel gets SIGKILL (PR_SET_PDEATHSIG on
// slurmstepd's main thread, which forks the tasks and lives as long as slurmstepd).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "checkpoint.hpp"

namespace sp::spank {

struct SentinelConfig {
  uint32_t job_id = 0;
  bool batch = false;     // the batch step: the task is the batch shell
  bool has_gpus = false;  // the step holds GPUs on this node
  JobCheckpoint checkpoint;
  std::string notice_path;     // "" when the job has no checkpoint directory
  uint32_t restart_count = 0;  // the task's SLURM_RESTART_COUNT (absent on the first run)
  std::string step_mark;       // kEnvStepMark's value in every task of the step
  pid_t task_pid = 0;          // the first task (whose start gate the sentinel waits on)
  pid_t stepd_pid = 0;         // slurmstepd: the sentinel's parent; the step's processes are
                               // its descendants
};

// Starts the sentinel as a child of the task's parent (slurmstepd), which runs once the task
// has exec'd. Returns its pid, or -1 (errno set). Call in the task, after setuid, just before
// its exec.
pid_t start_sentinel(const SentinelConfig& config);

// In slurmstepd, once the step's last task on this node has exited and before slurmstepd
// kills what is left of the step: waits, up to `timeout_ms`, until no live sentinel among its
// children is adding a preemption's preemptor to the notice (sentinel_completing_notice).
// Returns the pids of those still at it at the deadline.
std::vector<pid_t> wait_for_notices(int timeout_ms);

// Creates `dir` (and missing parents, mode 0700) as the calling user; refuses a symlink in its
// place, a directory owned by someone else, or one the user cannot write. "" on success, else
// one line saying why.
std::string prepare_checkpoint_dir(const std::string& dir);

// Removes the notice file of an earlier run, if it is the user's own regular file.
void remove_stale_notice(const std::string& notice_path);

}  // namespace sp::spank
