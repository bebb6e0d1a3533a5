// preempt/quota's translation layer: Slurm's job records into lib/quota.hpp's views, once per
// sweep (one preemptor's pass over the job list), and the claims of jobs in a grace.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "job_quota.hpp"
#include "policy.hpp"
#include "quota.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/slurmctld/slurmctld.h"
}

namespace sp {

// Slurm's own QOS rule, exactly as preempt/qos 22.05 applies it: the preemptor's QOS lists the
// victim's QOS in its Preempt list, or (same QOS, PreemptMode=WITHIN) a higher job priority.
// Inline: Slurm's victim search asks it of every job in its list (refused_by_qos_alone).
inline bool qos_preemptable(const job_record_t& victim, const job_record_t& preemptor) {
  const slurmdb_qos_rec_t* ee = victim.qos_ptr;
  const slurmdb_qos_rec_t* er = preemptor.qos_ptr;
  if (ee == nullptr || er == nullptr) return false;
  if (er->id == ee->id) {
    if ((er->preempt_mode & PREEMPT_MODE_WITHIN) ||
        (slurm_conf.preempt_mode & PREEMPT_MODE_WITHIN)) {
      return preemptor.priority > victim.priority;
    }
    return false;
  }
  return er->preempt_bitstr != nullptr &&
         static_cast<int64_t>(ee->id) < bit_size(er->preempt_bitstr) &&
         bit_test(er->preempt_bitstr, static_cast<bitoff_t>(ee->id));
}
// preempt_p_job_preempt_check: `preemptor` goes before `preemptee` in Slurm's queue when it may
// preempt it: by the QOS rule above, else (a policy with quotas) by class, through `order`'s
// current QueueClasses (lib/quota.hpp). No lock, no allocation. Call with the job lock held.
bool queue_preempts(const QueueOrder& order, const job_record_t& preemptor,
                    const job_record_t& preemptee);
// preempt_p_preemptable's first answer, before it looks at the victim's state: true when the
// policy in force (`order`'s current QueueClasses) has no quotas and the QOS rules do not let
// `preemptor` take `victim`, so that nothing else can. It reads the fields preempt/qos reads
// (both jobs' qos_ptr and their QOS), no more: Slurm asks this of every job in its list at each
// victim search. False when no policy is published yet (the caller decides the rest).
inline bool refused_by_qos_alone(const QueueOrder& order, const job_record_t& victim,
                                 const job_record_t& preemptor) {
  const QueueClasses* q = order.current();
  return q != nullptr && q->qos_alone() && !qos_preemptable(victim, preemptor);
}
// preempt/qos's PreemptMode and GraceTime for a job.
uint16_t qos_preempt_mode(const job_record_t& job);
uint32_t qos_grace_time(const job_record_t& job);

// A victim's grace starts (PREEMPT_DATA_GRACE_TIME): tells the watcher (ctld_bus.hpp) and
// returns the grace, `qos_grace` or the job's shorter promised one (lib/checkpoint.hpp).
uint32_t grace_start(const job_record_t& victim, uint32_t qos_grace, uint32_t preemptor,
                     time_t now);

// job_gpus, job_project, job_counted, job_class: plugins/common/job_quota.hpp.

// A steady clock in milliseconds (PassRequests' time), and the calling thread's tag.
int64_t steady_ms();
uint64_t thread_tag();

// What preempt/quota knows between calls. A sweep is one preemptor's pass over the job list
// (slurm_find_preemptable_jobs calls preempt_p_preemptable for every job, with the list locked:
// nothing here may walk job_list). The running jobs that earlier sweeps saw are kept; a new
// sweep starts (a new preemptor, the first job of the list met again, or a changed job table)
// by checking each of them and the previous preemptor (the only job that can have started
// since: every start goes through select_nodes, which sweeps for it) through Slurm's job hash,
// then building the quota snapshot once for the whole sweep. An array task that started
// after the previous sweep has a new job id this sweep meets only in the list: such a sweep
// answers by Slurm's QOS rules and classes only, and the next one has the task.
class QuotaSweeps {
 public:
  // What preemptable() says of a scheduling pass for the preemptor (lib/quota.hpp
  // PassRequests, looked up once per sweep, when the sweep meets its first victim).
  struct PassNote {
    bool ask_now = false;   // first sighting and passes are not deferred: schedule() now
    bool deferred = false;  // first sighting: due in PassRequests::kDelayMs (wake the thread)
    bool settled = false;   // was waiting; this sweep, by Slurm's scheduling, tested it
    PassRequests::Waiting waiting;  // with settled: what waited
  };
  // preempt_p_preemptable(victim, preemptor), with its reason. `now_update` is Slurm's
  // last_job_update. Call with the job write lock held.
  PreemptReason preemptable(const std::shared_ptr<const Policy>& policy, const job_record_t& victim,
                            const job_record_t& preemptor, int gpu_pos, time_t now_update,
                            PassNote* note = nullptr);
  // First sightings wait for Slurm's own scheduling before a pass is asked (a thread of the
  // plugin takes the due ones); off (the default): asked at once.
  void defer_passes(bool on);
  // A victim's grace started in this sweep (PREEMPT_DATA_GRACE_TIME): what waited for the
  // sweep's preemptor, now settled.
  std::optional<PassRequests::Waiting> grace_started();
  // The pass thread, with no Slurm lock: what is due at `now_ms`, and when the next is.
  std::vector<PassRequests::Waiting> take_due_passes(int64_t now_ms);
  int64_t next_pass_due_ms(int64_t now_ms);
  // PREEMPT_DATA_PRIO.
  uint32_t rank(const job_record_t& job, time_t now);
  uint64_t sweeps() const { return sweeps_; }
  // The preemptor of the current sweep (0: none yet).
  uint32_t preemptor();
  std::size_t known_running() const { return running_.size(); }

 private:
  struct Running {
    int project = -1;
    int cls = -1;
    uint64_t gpus = 0;
    bool counted = false;
    int64_t start_time = 0;
  };
  Running running_of(const Policy& policy, const job_record_t& job, int gpu_pos) const;
  void start_sweep(const std::shared_ptr<const Policy>& policy, const job_record_t& first,
                   const job_record_t& preemptor, int gpu_pos, time_t now_update);

  std::mutex m_;  // PRIO is also asked from dump_job, under a job read lock, in many threads
  std::shared_ptr<const Policy> policy_;
  uint32_t preemptor_ = 0;
  uint32_t previous_preemptor_ = 0;
  const job_record_t* first_ = nullptr;
  time_t update_ = 0;
  bool complete_ = false;  // a whole sweep has been seen: the running set is known
  PreemptorView pview_;
  std::unordered_map<uint32_t, Running> running_;
  QuotaSnapshot snapshot_;
  std::vector<QuotaRunningJob> scratch_;
  std::vector<uint32_t> running_ids_;
  ClaimTracker claims_;
  PassRequests passes_;
  bool defer_ = false;
  bool sighted_ = false;  // this sweep's preemptor was looked up in passes_
  uint64_t sweeps_ = 0;
};

}  // namespace sp
