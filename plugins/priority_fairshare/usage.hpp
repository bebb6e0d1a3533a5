// Fair-share usage in slurmctld: each pass decays every association's usage by the half-life,
// accrues the billable TRES-seconds of running jobs into their association chain and QOS, and
// recomputes the fields assoc_mgr keeps for sshare (usage_raw, usage_norm, usage_efctv,
// shares_norm, level_shares, fs_factor) with lib/fairshare. The time of the last pass is kept
// in StateSaveLocation/priority_fairshare_state; the usage itself is saved and restored by
// Slurm's association manager (assoc_usage), as for priority/multifactor.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fairshare.hpp"
#include "log.hpp"
#include "priority.hpp"
#include "story_field.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/slurmctld/slurmctld.h"
}

namespace sp {

// Logs a message the first time only (bad input must not flood slurmctld's log).
class LogOnce {
 public:
  void error(LogSink& log, const std::string& message) {
    if (!done_.exchange(true)) log.log_error(message);
  }

 private:
  std::atomic<bool> done_{false};
};

class UsageTracker {
 public:
  // Reads the state file (a missing or damaged one starts from `now`, logged).
  UsageTracker(LogSink& log, int64_t now);

  // One pass at `now` over `running` (collect_jobs()'s, in the same hold of the job lock):
  // decay, the running jobs' new usage, the fair-share factors; also gives back the
  // TRES-run-seconds running jobs used since the last pass (GrpTRESRunMins,
  // run_secs_to_release()), and on the first pass after a start what they ran up to the last
  // pass of the previous slurmctld (Slurm reserved their whole time limit again).
  // In two parts, both within one hold of slurmctld's job read lock (so no job starts or ends
  // between them): prepare() reads assoc_mgr and computes everything into this object (the
  // caller holds assoc_mgr's assoc, QOS and TRES read locks); apply() writes it (the caller
  // holds the assoc and QOS write and TRES read locks), so assoc_mgr's write hold is only the
  // writes. apply() first checks that nothing it read changed in between (the association
  // list, an association's usage, parent or shares, the TRES count: an administrator's
  // sacctmgr); if something did, it computes the pass again within its own hold, as one hold
  // did before. apply() without a prepare() since the last apply() does nothing.
  void prepare(int64_t now, const Weights& w, double dampening,
               const std::vector<job_record_t*>& running);
  void apply();

  // The job's run since the last pass, and what is left of its reserved run-seconds
  // (priority_p_job_end); once per run: it marks the run done (end_time_exp NO_VAL, as
  // priority/multifactor, which Slurm checks too). Same locks as apply().
  // A run killed at its preemption grace's end (the story's note, or `killed`: the end came at
  // or after the grace end preempt/quota noted, as with grace 0 or Slurm's own grace check),
  // its work lost, then gets its usage back but `lost_work_charge` of it (refund.hpp), noted in
  // its story (in `field`).
  void job_ended(job_record_t& job, int64_t now, double lost_work_charge, StoryField field,
                 bool killed = false);

  // After a reconfigure that cleared assoc_mgr's usage counters (priority_p_reconfig's
  // assoc_clear) Slurm has reserved every running job's whole time limit again: gives back
  // what each ran up to the last pass. The caller holds slurmctld's job read lock and
  // assoc_mgr's assoc and QOS write and TRES read locks.
  void resync_run_secs();

  // Writes the state file (temp + rename). Takes no Slurm lock.
  void save() const;

  int64_t last_decay() const { return last_decay_.load(); }

 private:
  // job_ended()'s: the run's usage straight into the association chain and its QOS.
  void accrue_ended(job_record_t& job, int64_t from, int64_t to);
  // prepare()'s: one running job's usage since `from` into nodes_ and the accumulators.
  void accrue_running(job_record_t& job, int64_t from, int64_t to);
  int32_t index_of(const void* assoc) const;
  bool unchanged() const;  // apply()'s check of what prepare() read
  void refund_lost_run(job_record_t& job, int64_t end, int64_t now, double lost_work_charge,
                       StoryField field, bool killed);
  void write_back();
  void log_issues();

  LogSink& log_;
  std::atomic<int64_t> last_decay_;
  bool run_secs_synced_ = false;            // the first pass gave back what ran before the start
  std::vector<FsNode> nodes_;               // reused between passes
  std::vector<slurmdb_assoc_rec_t*> recs_;  // recs_[i] is nodes_[i]
  std::vector<std::pair<const void*, int32_t>> index_;  // recs_ sorted by address
  // The prepared pass (prepare() -> apply()).
  struct Prepared {
    bool ready = false;       // prepare() ran since the last apply()
    bool clock_back = false;  // the clock went back: apply() only moves last_decay_
    int64_t now = 0;
    Weights weights;
    double dampening = 0;
    const std::vector<job_record_t*>* running = nullptr;
    double m = 1;  // decay multiplier
    int n_tres = 0;
  } prep_;
  std::vector<long double> seen_raw_;     // usage_raw of recs_[i] as prepare() read it
  std::vector<const void*> seen_parent_;  // its parent_assoc_ptr
  std::vector<double> acc_wall_;          // per node: new wall seconds, subtree included
  std::vector<double> acc_tres_;          // per node x TRES: new TRES-seconds, subtree included
  struct QosUse {
    const slurmdb_qos_rec_t* qos;
    long double usage;
    double secs;
  };
  std::vector<QosUse> qos_use_;  // new usage per QOS (matched against assoc_mgr's list)
  struct Release {
    job_record_t* job;
    uint64_t secs;
  };
  std::vector<Release> releases_;  // run-seconds to give back
  FsIssues issues_;
  LogOnce backwards_, clamped_, zero_shares_, bad_parent_;
  mutable LogOnce state_error_;  // save() is const
};

// One walk of the job list for a pass: the ids of the pending jobs whose priority it
// recalculates (not held, not set by hand) into `pending`, the running jobs whose usage it
// accrues into `running` (valid while the caller holds the job read lock). Takes no assoc_mgr
// lock: a pass holds assoc_mgr's write locks, which stop every submission, only for apply().
void collect_jobs(std::vector<uint32_t>& pending, std::vector<job_record_t*>& running);

// priority_p_set_assoc_usage: one association's usage_norm, usage_efctv and fs_factor from
// its fair-share parent's current values. The caller holds the assoc lock.
void set_assoc_usage(slurmdb_assoc_rec_t* assoc, double dampening);

// Path of the state file.
std::string state_file_path();

}  // namespace sp
