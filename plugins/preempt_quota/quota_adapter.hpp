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
// In two parts: qos_rule, inline, reads both jobs' qos_ptr and QOS, as preempt/qos does, and
// answers unless the preemptor's QOS has a Preempt list to look in (AskList); qos_list_allows,
// out of line, looks in it. Slurm's victim search asks this of every job in its list.
enum class QosVerdict : uint8_t { Refuse, Allow, AskList };
inline QosVerdict qos_rule(const job_record_t& victim, const job_record_t& preemptor) {
  const slurmdb_qos_rec_t* ee = victim.qos_ptr;
  const slurmdb_qos_rec_t* er = preemptor.qos_ptr;
  if (ee == nullptr || er == nullptr) return QosVerdict::Refuse;
  if (er->id == ee->id) {
    const bool within =
        (er->preempt_mode & PREEMPT_MODE_WITHIN) || (slurm_conf.preempt_mode & PREEMPT_MODE_WITHIN);
    return within && preemptor.priority > victim.priority ? QosVerdict::Allow : QosVerdict::Refuse;
  }
  return er->preempt_bitstr != nullptr ? QosVerdict::AskList : QosVerdict::Refuse;
}
// For QosVerdict::AskList: whether the preemptor's QOS' Preempt list holds the victim's QOS.
bool qos_list_allows(const job_record_t& victim, const job_record_t& preemptor);
inline bool qos_preemptable(const job_record_t& victim, const job_record_t& preemptor) {
  switch (qos_rule(victim, preemptor)) {
    case QosVerdict::Refuse: return false;
    case QosVerdict::Allow: return true;
    case QosVerdict::AskList: return qos_list_allows(victim, preemptor);
  }
  return false;
}
// preempt_p_job_preempt_check: `preemptor` goes before `preemptee` in Slurm's queue when it may
// preempt it: by the QOS rule above, else (a policy with quotas) by class, through `order`'s
// current QueueClasses (lib/quota.hpp). No lock, no allocation. Call with the job lock held.
bool queue_preempts(const QueueOrder& order, const job_record_t& preemptor,
                    const job_record_t& preemptee);
// preempt_p_preemptable's first answer, before it looks at the victim's state, from the
// fields preempt/qos reads (both jobs' qos_ptr and their QOS), no more: Slurm asks it of every
// job in its list at each victim search. When the policy in force (`order`'s current
// QueueClasses) has no quotas the QOS rules decide alone: Refuse, or AskList (the preemptor
// QOS' Preempt list, then the rest). Rest: the victim's state and the sweeps decide (the QOS
// rules allow it, the policy has quotas, or none is published yet). The entry branches on it
// without a call, so that its common refusal saves no register (the list's look is a call).
enum class FirstAnswer : uint8_t { Refuse, AskList, Rest };
inline FirstAnswer first_answer(const QueueOrder& order, const job_record_t& victim,
                                const job_record_t& preemptor) {
  const QueueClasses* q = order.current();
  if (q == nullptr || !q->qos_alone()) return FirstAnswer::Rest;
  switch (qos_rule(victim, preemptor)) {
    case QosVerdict::Refuse: return FirstAnswer::Refuse;
    case QosVerdict::AskList: return FirstAnswer::AskList;
    case QosVerdict::Allow: return FirstAnswer::Rest;
  }
  return FirstAnswer::Rest;
}
// preempt/qos's PreemptMode and GraceTime for a job.
uint16_t qos_preempt_mode(const job_record_t& job);
uint32_t qos_grace_time(const job_record_t& job);
// The job is in a preemption's grace: Slurm set its preempt time, and not as the gang scheduler
// suspended it (lib/watch.hpp grace_preempt_time: such a job, resumed, keeps that time).
bool in_grace(const job_record_t& job);

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
  // PREEMPT_DATA_PRIO. Call with the job write lock held, as preemptable(): Slurm asks it only
  // in its victim sort (preempt.c _sort_by_prio), whose callers (select_nodes, backfill, the
  // will-run RPC) all hold it. The policy it ranks by is the last sweep's, set under that lock.
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

  // Whether `job`'s story protects it at `now` (starvation_of), kept per job while its story
  // (the same text at the same address) and `now` stay: Slurm's victim sort asks PRIO of both
  // jobs at every comparison, so each candidate's story would be read 2 log2(n) times a sort.
  // Notes are only appended (a longer text); a rewrite of the same length at the same address
  // within the same second would be seen a second later, in the ranking only.
  bool starving(const Policy& policy, const job_record_t& job, time_t now);

  struct StoryMemo {
    const char* text = nullptr;
    std::size_t size = 0;
    time_t now = 0;
    bool starving = false;
  };
  static constexpr std::size_t kStoryMemoCap = 4096;  // then it starts over

  // The pass thread (take_due_passes, next_pass_due_ms) holds no Slurm lock: m_ orders it with
  // the sweeps. rank() takes none (see there).
  std::mutex m_;
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
  std::unordered_map<uint32_t, StoryMemo> story_memo_;  // by job id; policy_'s starvation rules
  uint64_t sweeps_ = 0;
};

}  // namespace sp
