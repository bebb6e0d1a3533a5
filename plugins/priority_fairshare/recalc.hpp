// The controller side of priority/fairshare that is not an entry point: the policy and
// weights in force (swapped whole at reconfigure), the periodic recalculation of pending jobs'
// priorities (so age advances), and the factors list sprio asks for.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "clock.hpp"
#include "log.hpp"
#include "periodic_thread.hpp"
#include "policy.hpp"
#include "priority.hpp"
#include "priority_adapter.hpp"
#include "quota.hpp"
#include "usage.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/slurmctld/slurmctld.h"
}

namespace sp {

// Policy and weights, read by every priority_p_set and replaced whole by reconfigure.
class PriorityState {
 public:
  struct Snapshot {
    std::shared_ptr<const Policy> policy;
    Weights weights;
  };
  void set(std::shared_ptr<const Policy> policy, const Weights& w);
  Snapshot snapshot() const;  // copies a shared_ptr: no allocation
  bool ready() const;
  std::string describe() const;

 private:
  mutable std::mutex m_;
  Snapshot s_;
};

// What the recalculation thread and the plugin's entry points share. Owned through a shared
// pointer by the thread too: the thread is never joined (periodic_thread.hpp) and may outlive
// the plugin object for a moment after fini().
struct RecalcContext {
  std::shared_ptr<LogSink> log;  // first: destroyed last
  SystemClock clock;
  PriorityState state;
  std::unique_ptr<UsageTracker> usage;  // slurmctld only
  LogOnce no_assoc, saturate, conf_unread;
  // Set by priority_p_reconfig (which may run under Slurm's locks, where nothing is parsed):
  // the thread reads preempt.yaml and slurm.conf's weights again before its next pass, with no
  // Slurm lock held.
  std::atomic<bool> reload_requested{false};
  // The first reload is init's (it started from the policy slurmctld held): logged "at start".
  // Set before the thread starts, then read and cleared by it alone.
  bool reload_at_start = false;
  // Fair division of idle GPUs: over-quota keys from the last pass, continued by
  // priority_p_set between passes. gpu_pos: the gres/gpu TRES position the last pass found.
  std::mutex ledger_m;
  OverQuotaLedger ledger;
  std::atomic<int> gpu_pos{-1};
  // The pass' scratch (its thread only), kept to avoid reallocating every pass.
  std::vector<PendingQuotaJob> pass_pending;
  std::vector<job_record_t*> pass_running;  // the usage walk's running jobs, within one hold
};

// slurm.conf's priority settings, a PriorityWeight* of 0 told from no such key by reading the
// file again (weight_keys_in). ConfLock::Take takes slurmctld's config read lock for the fields
// only: the recalculation thread, without Slurm's locks. ConfLock::None reads them as they are:
// init only, which Slurm calls where nothing else may change slurm_conf (at slurmctld's start
// before its threads, or, loading the plugin on first use, from read_slurm_conf on the thread
// that holds the write locks: a read lock taken there is EDEADLK, fatal() in Slurm).
enum class ConfLock : uint8_t { Take, None };
SlurmWeights read_slurm_weights(RecalcContext& ctx, ConfLock lock = ConfLock::Take);

// The priority of one job under the snapshot, `over_quota` its over_quota_factor() (0 when the
// policy has no quotas). Caller holds the job lock and assoc_mgr's assoc and QOS read (or
// write) locks.
// `memo` (optional): the QOS terms found in this hold of the QOS lock.
uint32_t compute_priority(RecalcContext& ctx, job_record_t& job, const PriorityState::Snapshot& s,
                          int64_t now, double over_quota, QosTermsMemo* memo = nullptr);

// The over-quota factor of a job priority_p_set meets (submitted, requeued, released): its key
// from the ledger. Caller holds the job write lock.
double over_quota_of(RecalcContext& ctx, const job_record_t& job, const PriorityState::Snapshot& s);

// Puts `policy` with slurm.conf's weights in force, and says once if they can overflow 32 bits.
void set_policy(RecalcContext& ctx, std::shared_ptr<const Policy> policy, const SlurmWeights& conf);

// Every calc period (the effective weights' calc_period_s), and at once after wake(): the
// policy reload if one was requested, then one usage pass (decay, accrual, fair-share factors)
// under slurmctld's job and part read locks, assoc_mgr's assoc and QOS write and TRES read
// locks inside them for the usage alone (Slurm's order); then the priority of every pending
// job, a slice at a time under the job write lock.
class Recalculator {
 public:
  explicit Recalculator(const std::shared_ptr<RecalcContext>& ctx);
  void wake() { thread_.wake(); }

 private:
  PeriodicThread thread_;
};

// FairShareDampeningFactor from slurm.conf (1 when unset).
double dampening_factor();

// sprio's answer: one priority_factors_object_t per listed pending job (xmalloc'd; Slurm
// frees the list). Takes slurmctld's job and part read locks.
List factors_list(const priority_factors_request_msg_t& req, uid_t uid, uint32_t weight_partition);

}  // namespace sp
