// The preemption watcher: a thread in slurmctld, ticking every second, that does promptly
// what stock 22.05 does late.
//  - A preempted job whose grace has run out is requeued or cancelled now; slurmctld itself
//    notices only in its 30 s periodic pass, which keeps owners waiting up to 30 s too long.
//  - A requeued job that Slurm holds for cred_expire + 1 s (121 s by default) becomes eligible
//    once its previous run has finished on its nodes and 2 s have passed since the requeue:
//    the new launch credential is then newer than the revoke and the nodes are clean, which is
//    all the hold protects. A --begin the user asked for is not touched.
//  - Checkpoint signals (lib/checkpoint.hpp): when a managed job's grace starts, its steps get
//    the private trigger (Slurm sends it to the batch shell's process group itself), its grace
//    is shortened to what the job asked for, and AdminComment says who preempted it. Before a
//    managed job's time limit it sends the time-limit trigger.
//  - A preempted job that exits during its grace, with any exit code, is requeued (as Slurm
//    does at grace end) instead of ending COMPLETED or FAILED.
// Then it asks for a scheduling pass, so the freed nodes are used at once.
#pragma once

#include <atomic>
#include <map>
#include <memory>

#include "checkpoint.hpp"
#include "clock.hpp"
#include "log.hpp"
#include "periodic_thread.hpp"
#include "policy.hpp"

struct job_record;
typedef struct job_record job_record_t;

namespace sp {

class PreemptionWatcher {
 public:
  // `policy` is checked once against slurmctld's configuration at the first tick (when it is
  // loaded), so a site without priority/fairshare (which refuses such a policy at start)
  // still hears about names Slurm does not know.
  PreemptionWatcher(LogSink& log, const Clock& clock, std::shared_ptr<const Policy> policy);

 private:
  void tick();

  // What the watcher remembers of a managed job's current run (thread-only).
  struct Run {
    int64_t start = 0;  // the run's start time: a new run forgets the old one
    uint32_t restart = 0;
    bool preempt_triggered = false;
    bool time_limit_triggered = false;
    bool killed = false;    // killed by the watcher at grace end
    int64_t grace_end = 0;  // set when the preemption is triggered
  };
  std::map<uint32_t, Run> runs_;
  // Jobs that requeued themselves during their grace, by job id: the end of that grace. Slurm
  // terminates them with TERM and waits KillWait before KILL; a job that ignores TERM would
  // hold its nodes past the grace it was promised, so what is left at grace end is killed.
  std::map<uint32_t, int64_t> draining_;
  // Kills every process of the job still on its completing nodes.
  void kill_lingering(const job_record_t& job) const;
  void trigger_preemption(job_record_t& job, const JobCheckpoint& promise, time_t now);
  // A preempted run that is no longer running: requeue it if it exited during its grace.
  // Returns whether the job changed.
  bool settle_ended_run(job_record_t& job, const JobCheckpoint& promise, const Run& run,
                        time_t now);
  // Until the next tick: 1 s, or less when a grace ends sooner (it ends on a whole second).
  std::chrono::milliseconds until_next_tick() const;

  LogSink& log_;
  const Clock& clock_;
  std::shared_ptr<const Policy> policy_to_check_;  // released after the first tick
  std::atomic<int64_t> next_grace_end_{0};         // earliest end of a running grace; 0: none
  PeriodicThread thread_;                          // last: stopped and joined first
};

}  // namespace sp
