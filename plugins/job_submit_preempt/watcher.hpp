// The preemption watcher: a thread in slurmctld that does promptly what stock 22.05 does late,
// and keeps each managed job's checkpoint promise (decisions: lib/watcher.hpp, pure).
//  - A preempted job whose grace has run out is killed and requeued or cancelled now; slurmctld
//    itself notices only in its 30 s periodic pass, then waits KillWait after a TERM.
//  - A requeued job that Slurm holds for cred_expire + 1 s (121 s by default) becomes eligible
//    once its previous run has left its nodes and 2 s have passed. A --begin is not touched.
//  - Checkpoint signals: at grace start the other steps get the private trigger (Slurm sends
//    it to the batch shell itself), the grace is shortened to what the job asked for, and
//    AdminComment says who preempted it. Before a time limit, the time-limit trigger.
//  - A preempted job that exits during its grace is requeued, never COMPLETED.
//  - Its records persist in StateSaveLocation/job_submit_preempt_state, written after each
//    change outside Slurm's locks, and are read back at start: a slurmctld that dies during a
//    grace keeps every promise when it comes back (what the file missed is rebuilt from
//    Slurm's job state).
//  - After `scontrol reconfigure` it reloads preempt.yaml, outside Slurm's locks.
// It is never joined (periodic_thread.hpp): fini() may run under slurmctld's write locks.
#pragma once

#include <atomic>
#include <ctime>
#include <memory>
#include <string>

#include "clock.hpp"
#include "ctld_policy.hpp"
#include "watch_adapter.hpp"
#include "log.hpp"
#include "periodic_thread.hpp"

struct job_record;
typedef struct job_record job_record_t;

namespace sp {

// What job_submit's entry points and the watcher thread share; it outlives either.
struct ControllerShared {
  std::shared_ptr<LogSink> log;
  SystemClock clock;
  PolicyStore policy;
  std::atomic<time_t> conf_stamp{0};  // slurm_conf.last_update of the policy in force
};

// Slurm's hold of a pending job (job_mgr.c _hold_job_rec, with the reason _update_job gives:
// JobHeldUser, JobHeldAdmin for `admin`), and its release (_release_job_rec), on this record
// only. Caller holds the job write lock.
void hold_pending(job_record_t& job, bool admin);
void release_pause_hold(job_record_t& job);

// How a preemption ends the job's run (watch_adapter.hpp PreemptEnd), as slurmctld says now
// (slurm_job_preempt_mode: its QOS' PreemptMode, else slurm.conf's). Caller holds the config
// read lock and the job write lock (for a heterogeneous job's leader, Slurm keeps the
// component whose mode it took in the record).
PreemptEnd preempt_end(const job_record_t& job);

class PreemptionWatcher {
 public:
  // Registers itself as the watcher grace-start events wake (ctld_bus.hpp).
  explicit PreemptionWatcher(std::shared_ptr<ControllerShared> shared);
  ~PreemptionWatcher();
  PreemptionWatcher(const PreemptionWatcher&) = delete;
  PreemptionWatcher& operator=(const PreemptionWatcher&) = delete;
  void wake() { thread_.wake(); }

 private:
  struct Impl;
  explicit PreemptionWatcher(const std::shared_ptr<Impl>& impl);
  PeriodicThread thread_;
};

}  // namespace sp
