#include "quota_adapter.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <pthread.h>

#include "ctld_bus.hpp"
#include "job_promise.hpp"
#include "job_state.hpp"
#include "story_slot.hpp"
#include "watch.hpp"

extern "C" {
#include "src/common/bitstring.h"
#include "src/slurmctld/slurmctld.h"
}

namespace sp {

bool qos_list_allows(const job_record_t& victim, const job_record_t& preemptor) {
  const slurmdb_qos_rec_t* ee = victim.qos_ptr;
  const slurmdb_qos_rec_t* er = preemptor.qos_ptr;
  // Checked again: qos_rule's answer may come from an earlier read of the records.
  if (ee == nullptr || er == nullptr || er->preempt_bitstr == nullptr) return false;
  return static_cast<int64_t>(ee->id) < bit_size(er->preempt_bitstr) &&
         bit_test(er->preempt_bitstr, static_cast<bitoff_t>(ee->id));
}

bool queue_preempts(const QueueOrder& order, const job_record_t& preemptor,
                    const job_record_t& preemptee) {
  if (qos_preemptable(preemptee, preemptor)) return true;
  // Slurm's queue sort asks this twice per comparison. QueueClasses answers at once when the
  // QOS rules alone decide, and reads a QOS' name only the first time it sees its id.
  const QueueClasses* q = order.current();
  const slurmdb_qos_rec_t* er = preemptor.qos_ptr;
  const slurmdb_qos_rec_t* ee = preemptee.qos_ptr;
  if (q == nullptr || er == nullptr || ee == nullptr) return false;
  return q->preempts(er->id, er->name, ee->id, ee->name);
}

uint16_t qos_preempt_mode(const job_record_t& job) {
  uint16_t mode = (job.qos_ptr != nullptr && job.qos_ptr->preempt_mode != 0)
                      ? job.qos_ptr->preempt_mode
                      : slurm_conf.preempt_mode;
  mode &= static_cast<uint16_t>(~PREEMPT_MODE_GANG);
  mode &= static_cast<uint16_t>(~PREEMPT_MODE_WITHIN);
  return mode;
}

bool in_grace(const job_record_t& job) {
  if (job.preempt_time == 0) return false;
  // A heterogeneous job's mode is its template component's, once Slurm picked one
  // (slurm_job_preempt_mode); never picked here (that writes the record).
  const job_record_t& moded = job.job_preempt_comp != nullptr ? *job.job_preempt_comp : job;
  const bool suspends = preemption_suspends(qos_preempt_mode(moded), slurm_conf.preempt_mode);
  return grace_preempt_time(job.preempt_time, suspends) != 0;
}

uint32_t qos_grace_time(const job_record_t& job) {
  return job.qos_ptr == nullptr ? 0 : job.qos_ptr->grace_time;
}

uint32_t grace_start(const job_record_t& victim, uint32_t qos_grace, uint32_t preemptor,
                     time_t now) {
  uint32_t grace = qos_grace;
  const auto promise = promise_of(victim);
  if (promise && promise->grace_s >= 0 && static_cast<uint64_t>(promise->grace_s) < qos_grace) {
    grace = static_cast<uint32_t>(promise->grace_s);
  }
  WatchEvent e;
  e.kind = WatchEvent::Kind::GraceStart;
  e.job_id = victim.job_id;
  e.preemptor = preemptor;
  e.at = now;
  e.start = victim.start_time;
  e.restarts = victim.restart_cnt;
  e.grace = grace;  // 0: Slurm requeues or cancels it in this very call
  // Slurm ends the grace at now + grace, or at the time limit's end if sooner (preempt.c
  // _job_check_grace_internal): a kill there is the grace end's.
  const int64_t grace_end = victim.end_time != 0 ? std::min<int64_t>(victim.end_time, now + grace)
                                                 : static_cast<int64_t>(now) + grace;
  bus::preempted_runs().graced(victim.job_id, victim.start_time, now, grace_end,
                               promise.has_value());
  bus::publish(e);
  return grace;
}

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint64_t thread_tag() { return static_cast<uint64_t>(pthread_self()); }

void QuotaSweeps::defer_passes(bool on) {
  const std::lock_guard<std::mutex> lk(m_);
  defer_ = on;
}

std::optional<PassRequests::Waiting> QuotaSweeps::grace_started() {
  const std::lock_guard<std::mutex> lk(m_);
  return passes_.settle(preemptor_);
}

std::vector<PassRequests::Waiting> QuotaSweeps::take_due_passes(int64_t now_ms) {
  const std::lock_guard<std::mutex> lk(m_);
  return passes_.take_due(now_ms);
}

int64_t QuotaSweeps::next_pass_due_ms(int64_t now_ms) {
  const std::lock_guard<std::mutex> lk(m_);
  return passes_.next_due_ms(now_ms);
}

uint32_t QuotaSweeps::preemptor() {
  const std::lock_guard<std::mutex> lk(m_);
  return preemptor_;
}

QuotaSweeps::Running QuotaSweeps::running_of(const Policy& policy, const job_record_t& job,
                                             int gpu_pos) const {
  Running r;
  r.project = job_project(policy, job);
  r.cls = job_class(policy, job);
  r.gpus = job_gpus(job, gpu_pos);
  r.counted = job_counted(policy, r.project, job);
  r.start_time = job.start_time;
  return r;
}

void QuotaSweeps::start_sweep(const std::shared_ptr<const Policy>& policy,
                              const job_record_t& first, const job_record_t& preemptor, int gpu_pos,
                              time_t now_update) {
  ++sweeps_;
  sighted_ = false;
  complete_ = complete_ || preemptor_ != 0;
  previous_preemptor_ = preemptor_;
  preemptor_ = preemptor.job_id;
  first_ = &first;
  update_ = now_update;
  if (policy_ != policy) {  // reloaded: classes and projects may have moved
    policy_ = policy;
    running_.clear();
    story_memo_.clear();  // the starvation rules may have changed
    complete_ = false;
  }
  const Policy& p = *policy_;
  pview_ = PreemptorView{};
  pview_.job_id = preemptor.job_id;
  if (p.quotas.empty()) {  // no quotas: Slurm's QOS rules, classes and claims only
    // What is known of jobs that no longer run goes when the claims doubled, not per call
    // (Slurm asks about every job of its list, pending ones included, and those calls return
    // before any lock) nor per sweep (each entry is a lookup in Slurm's job table).
    if (claims_.prune_due()) {
      claims_.retain_if([](uint32_t id) {
        const job_record_t* j = find_job_record(id);
        return j != nullptr && IS_JOB_RUNNING(j);
      });
    }
    return;
  }
  // Jobs that ended since (or were requeued) leave; the previous preemptor may have started.
  for (auto it = running_.begin(); it != running_.end();) {
    const job_record_t* j = find_job_record(it->first);
    if (j == nullptr || !IS_JOB_RUNNING(j)) {
      it = running_.erase(it);
    } else {
      it->second = running_of(p, *j, gpu_pos);
      ++it;
    }
  }
  if (previous_preemptor_ != 0) {
    if (const job_record_t* j = find_job_record(previous_preemptor_); j != nullptr) {
      if (IS_JOB_RUNNING(j)) {
        running_[j->job_id] = running_of(p, *j, gpu_pos);
      } else if (j->array_recs != nullptr) {
        // An array's task that started got a new job id (job_array_split): this sweep meets
        // it in the list only after the snapshot is built, so it reclaims nothing by quota.
        complete_ = false;
      }
    }
  }
  scratch_.clear();
  running_ids_.clear();
  for (const auto& [id, r] : running_) {
    scratch_.push_back({id, r.project, r.cls, r.gpus, r.counted, r.start_time});
    running_ids_.push_back(id);
  }
  snapshot_ = build_quota_snapshot(p, scratch_);
  std::sort(running_ids_.begin(), running_ids_.end());
  claims_.retain(running_ids_);

  pview_.project = job_project(p, preemptor);
  pview_.cls = job_class(p, preemptor);
  pview_.gpus = job_gpus(preemptor, gpu_pos);
  pview_.counted = job_counted(p, pview_.project, preemptor);
  if (pview_.project >= 0) {
    pview_.project_used = snapshot_.projects[static_cast<std::size_t>(pview_.project)].used;
  }
}

PreemptReason QuotaSweeps::preemptable(const std::shared_ptr<const Policy>& policy,
                                       const job_record_t& victim, const job_record_t& preemptor,
                                       int gpu_pos, time_t now_update, PassNote* note) {
  // Only a running job is a victim. Slurm asks about every job of its list (thousands of
  // pending ones per victim search, under its job write lock): they are answered without a
  // lock, and what the sweeps know of jobs that stopped running is dropped at each sweep's
  // start (start_sweep), not here.
  const job_record_t* victim_ptr = &victim;
  if (!IS_JOB_RUNNING(victim_ptr)) return PreemptReason::None;
  const std::lock_guard<std::mutex> lk(m_);
  if (preemptor.job_id != preemptor_ || &victim == first_ || now_update != update_ ||
      policy != policy_) {
    start_sweep(policy, victim, preemptor, gpu_pos, now_update);
  }
  const Policy& p = *policy_;
  const bool qos_allows = qos_preemptable(victim, preemptor);
  // The common answer, for every running job of every pending preemptor, at the cost of
  // preempt/qos' bit test.
  if (qos_alone_decides(p) && !qos_allows) return PreemptReason::None;
  const Running r = running_of(p, victim, gpu_pos);
  if (!p.quotas.empty()) running_[victim.job_id] = r;

  VictimView v;
  v.job_id = victim.job_id;
  v.running = true;
  v.qos_allows = qos_allows;
  v.project = r.project;
  v.cls = r.cls;
  // Until a whole sweep has been seen, a project's usage is not known: no quota reclaim yet.
  v.borrowing = complete_ && snapshot_.is_borrowing(victim.job_id);
  v.in_grace = in_grace(victim);
  if (v.in_grace) {
    v.claimed_by = claims_.observe(victim.job_id, victim.start_time, true, preemptor.job_id);
    // A claim holds only while its preemptor still waits for the victim: started elsewhere,
    // cancelled or gone, it no longer keeps other preemptors away.
    if (v.claimed_by != 0 && v.claimed_by != preemptor.job_id) {
      const job_record_t* claimant = find_job_record(v.claimed_by);
      if (claimant == nullptr || !IS_JOB_PENDING(claimant)) v.claimed_by = 0;
    }
  }
  const PreemptReason reason = may_preempt(v, pview_, p);
  if (!v.in_grace && reason != PreemptReason::None) {
    claims_.observe(victim.job_id, victim.start_time, false, preemptor.job_id);
  }
  if (reason != PreemptReason::None && !sighted_) {
    sighted_ = true;
    PassRequests::Waiting settled;
    const PassRequests::Seen seen = passes_.sighted(preemptor.job_id, victim.job_id, reason,
                                                    thread_tag(), steady_ms(), &settled);
    if (seen == PassRequests::Seen::First && !defer_) {
      (void)passes_.settle(preemptor.job_id);  // asked now (below): nothing waits
    }
    if (note != nullptr) {
      note->ask_now = seen == PassRequests::Seen::First && !defer_;
      note->deferred = seen == PassRequests::Seen::First && defer_;
      note->settled = seen == PassRequests::Seen::Tested;
      if (note->settled) note->waiting = settled;
    }
  }
  return reason;
}

bool QuotaSweeps::starving(const Policy& policy, const job_record_t& job, time_t now) {
  const char* story = story_text(job, policy.story.field);
  if (story == nullptr) return false;
  const std::size_t size = std::strlen(story);
  if (const auto it = story_memo_.find(job.job_id); it != story_memo_.end()) {
    const StoryMemo& m = it->second;
    if (m.text == story && m.size == size && m.now == now) return m.starving;
  }
  const bool starving =
      starvation_of(std::string_view(story, size), now, policy.starvation).protected_;
  if (story_memo_.size() >= kStoryMemoCap) story_memo_.clear();
  story_memo_[job.job_id] = StoryMemo{story, size, now, starving};
  return starving;
}

uint32_t QuotaSweeps::rank(const job_record_t& job, time_t now) {
  // No m_ here: what this reads and writes (policy_, story_memo_) changes only under the job
  // write lock, which every caller holds (rank()'s contract); m_ would cost more than the rest
  // of the call, asked 2 log2(n) times per candidate of a sort.
  RankView v;
  v.in_grace = in_grace(job);
  if (policy_ != nullptr && ranks_by_class(*policy_)) v.cls = job_class(*policy_, job);
  if (policy_ != nullptr && policy_->starvation.enabled())
    v.starving = starving(*policy_, job, now);
  v.runtime_s = job.start_time > 0 && now > job.start_time ? now - job.start_time : 0;
  v.qos_priority = job.qos_ptr == nullptr ? 0 : job.qos_ptr->priority;
  v.node_count = job.node_cnt;
  static const Policy kNoClasses{};
  return victim_rank(v, policy_ == nullptr ? kNoClasses : *policy_);
}

}  // namespace sp
