// The controller side of priority/fairshare that is not an entry point: the policy and
// weights in force (swapped whole at reconfigure), the periodic recalculation of pending jobs'
// priorities (so age advances), and the factors list sprio asks for.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "clock.hpp"
#include "log.hpp"
#include "periodic_thread.hpp"
#include "policy.hpp"
#include "priority.hpp"
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

// Every calc period (the effective weights' calc_period_s), and at once after wake(): one
// usage pass (decay, accrual, fair-share factors) and then the priority of every pending job,
// in one locked region so sshare and sprio agree. Takes slurmctld's job write and part read
// locks, then assoc_mgr's assoc and QOS write and TRES read locks (Slurm's order).
class Recalculator {
 public:
  using Compute = uint32_t (*)(job_record_t&, const PriorityState::Snapshot&, int64_t now);
  Recalculator(LogSink& log, const PriorityState& state, const Clock& clock, Compute compute,
               UsageTracker& usage);
  void wake() { thread_.wake(); }

 private:
  void pass();

  LogSink& log_;
  const PriorityState& state_;
  const Clock& clock_;
  Compute compute_;
  UsageTracker& usage_;
  bool named_ = false;
  PeriodicThread thread_;  // last: stopped and joined first
};

// FairShareDampeningFactor from slurm.conf (1 when unset).
double dampening_factor();

// sprio's answer: one priority_factors_object_t per listed pending job (xmalloc'd; Slurm
// frees the list). Takes slurmctld's job and part read locks.
List factors_list(const priority_factors_request_msg_t& req, uid_t uid);

}  // namespace sp
