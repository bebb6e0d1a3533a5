#include "quota.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "checkpoint.hpp"
#include "pause_mark.hpp"
#include "text.hpp"

namespace sp {

namespace {

const PriorityClass* class_at(const Policy& policy, int cls) {
  if (cls < 0 || static_cast<std::size_t>(cls) >= policy.classes.size()) return nullptr;
  return &policy.classes[static_cast<std::size_t>(cls)];
}

const Quota* quota_at(const Policy& policy, int project) {
  if (project < 0 || static_cast<std::size_t>(project) >= policy.quotas.size()) return nullptr;
  return &policy.quotas[static_cast<std::size_t>(project)];
}

// Order in which a project's running jobs fill its quota: non-preemptible classes, then jobs
// of no class (never a quota victim), then preemptible classes by priority; oldest first.
std::tuple<int, int64_t, int64_t, uint32_t> fill_key(const Policy& policy,
                                                     const QuotaRunningJob& j) {
  const PriorityClass* c = class_at(policy, j.cls);
  const int tier = c == nullptr ? 1 : (c->preemptible ? 2 : 0);
  const int64_t prio = c == nullptr ? 0 : -static_cast<int64_t>(c->priority);
  return {tier, prio, j.start_time, j.job_id};
}

std::string join(const std::vector<std::string>& parts, char sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out.push_back(sep);
    out.append(p);
  }
  return out;
}

}  // namespace

const char* reason_name(PreemptReason r) {
  switch (r) {
    case PreemptReason::Qos: return "qos";
    case PreemptReason::ClassInProject: return "class";
    case PreemptReason::QuotaReclaim: return "quota reclaim";
    case PreemptReason::None: break;
  }
  return "none";
}

bool QuotaSnapshot::is_borrowing(uint32_t job_id) const {
  return std::binary_search(borrowing.begin(), borrowing.end(), job_id);
}

QuotaSnapshot build_quota_snapshot(const Policy& policy, std::vector<QuotaRunningJob>& jobs) {
  QuotaSnapshot s;
  s.projects.resize(policy.quotas.size());
  std::sort(jobs.begin(), jobs.end(), [&](const QuotaRunningJob& a, const QuotaRunningJob& b) {
    if (a.project != b.project) return a.project < b.project;
    return fill_key(policy, a) < fill_key(policy, b);
  });
  for (const auto& j : jobs) {
    const Quota* q = quota_at(policy, j.project);
    const PriorityClass* c = class_at(policy, j.cls);
    if (q == nullptr || !j.counted) {
      // Outside any quota: a class job here runs on borrowed GPUs.
      if (c != nullptr && c->preemptible) s.borrowing.push_back(j.job_id);
      continue;
    }
    auto& p = s.projects[static_cast<std::size_t>(j.project)];
    p.used += j.gpus;
    if (c != nullptr && !c->preemptible) p.nonpreemptible += j.gpus;
    const auto quota = static_cast<uint64_t>(q->gpus);
    if (p.used > quota) {
      p.borrowed = p.used - quota;
      if (c != nullptr && c->preemptible) s.borrowing.push_back(j.job_id);
    }
  }
  std::sort(s.borrowing.begin(), s.borrowing.end());
  return s;
}

PreemptReason may_preempt(const VictimView& victim, const PreemptorView& preemptor,
                          const Policy& policy) {
  if (!victim.running || victim.job_id == preemptor.job_id) return PreemptReason::None;
  if (victim.in_grace && victim.claimed_by != 0 && victim.claimed_by != preemptor.job_id) {
    return PreemptReason::None;
  }
  const PriorityClass* vc = class_at(policy, victim.cls);
  // With quotas, inference and build are never victims, whatever a QOS Preempt list says.
  if (vc != nullptr && !vc->preemptible && !policy.quotas.empty()) return PreemptReason::None;
  if (victim.qos_allows) return PreemptReason::Qos;
  const PriorityClass* pc = class_at(policy, preemptor.cls);
  if (vc == nullptr || !vc->preemptible || pc == nullptr) return PreemptReason::None;
  const Quota* pq = quota_at(policy, preemptor.project);
  if (pq == nullptr) return PreemptReason::None;
  if (victim.project == preemptor.project) {
    return pc->priority > vc->priority ? PreemptReason::ClassInProject : PreemptReason::None;
  }
  if (!victim.borrowing || !preemptor.counted) return PreemptReason::None;
  const uint64_t after = preemptor.project_used + preemptor.gpus;
  return after <= static_cast<uint64_t>(pq->gpus) ? PreemptReason::QuotaReclaim
                                                  : PreemptReason::None;
}

bool preempts_in_queue(bool qos_allows, int first_cls, int second_cls, const Policy& policy) {
  if (qos_allows) return true;
  if (policy.quotas.empty()) return false;  // without quotas, preempt/qos's order exactly
  const PriorityClass* a = class_at(policy, first_cls);
  const PriorityClass* b = class_at(policy, second_cls);
  return a != nullptr && b != nullptr && b->preemptible && a->priority > b->priority;
}

QueueClasses::QueueClasses(std::shared_ptr<const Policy> policy)
    : policy_(std::move(policy)), qos_alone_(policy_ == nullptr || qos_alone_decides(*policy_)) {}

int QueueClasses::class_of(uint32_t id, const char* name) const {
  if (policy_ == nullptr) return -1;
  if (id < kCachedQos) {
    const int16_t c = cls_[id].load(std::memory_order_relaxed);
    if (c != 0) return c - 2;
  }
  const int found = name == nullptr || *name == '\0' || policy_->classes.empty()
                        ? -1
                        : policy_->class_index(name);
  if (id < kCachedQos && found + 2 <= INT16_MAX) {
    cls_[id].store(static_cast<int16_t>(found + 2), std::memory_order_relaxed);
  }
  return found;
}

bool QueueClasses::preempts_by_class(uint32_t first_id, const char* first_name, uint32_t second_id,
                                     const char* second_name) const {
  return preempts_in_queue(false, class_of(first_id, first_name), class_of(second_id, second_name),
                           *policy_);
}

void QueueOrder::set(std::shared_ptr<const Policy> policy) {
  auto q = std::make_unique<QueueClasses>(std::move(policy));
  const std::lock_guard<std::mutex> lk(m_);
  current_.store(q.get(), std::memory_order_release);
  all_.push_back(std::move(q));
}

std::size_t QueueOrder::retire_unused() {
  const std::lock_guard<std::mutex> lk(m_);
  const QueueClasses* keep = current_.load(std::memory_order_acquire);
  const std::size_t before = all_.size();
  std::erase_if(all_, [&](const std::unique_ptr<QueueClasses>& q) { return q.get() != keep; });
  return before - all_.size();
}

std::size_t QueueOrder::kept() const {
  const std::lock_guard<std::mutex> lk(m_);
  return all_.size();
}

Starvation starvation_of(std::string_view story, int64_t now, const StarvationPolicy& p) {
  Starvation s;
  if (!p.enabled()) return s;
  constexpr std::string_view kMark = "slurm-preempt: preempted at ";
  // The notes are appended in time order: the last mark is the last preemption.
  const std::size_t last = rfind_note(story, kMark);
  if (last == std::string_view::npos) return s;
  s.last = parse_utc(story.substr(last + kMark.size(), 20));
  if (s.last == 0) return s;
  int64_t previous = 0;
  for (std::size_t at = find_note(story, kMark); at != std::string_view::npos;
       at = find_note(story, kMark, at + kMark.size())) {
    const int64_t t = parse_utc(story.substr(at + kMark.size(), 20));
    // One preemption noted twice (its grace start and its settling) counts once.
    if (t != 0 && t != previous && t <= s.last && s.last - t <= p.window_s) ++s.recent;
    if (t != 0) previous = t;
  }
  if (s.recent >= p.max_preemptions) {
    s.until = s.last + p.protect_for_s;
    s.protected_ = now < s.until;
  }
  return s;
}

std::string note_protected(const Starvation& s, const StarvationPolicy& p) {
  return "protected from preemption until " + format_utc(s.until) + ": preempted " +
         std::to_string(s.recent) + " times within " + std::to_string(p.window_s) +
         " s, taken as a victim last";
}

uint32_t victim_rank(const RankView& v, const Policy& policy) {
  if (v.in_grace) return 0;
  if (v.starving) return kStarvingRank;
  constexpr uint64_t kMax16 = 0xffff;
  uint64_t rank = 0;
  const PriorityClass* c = ranks_by_class(policy) ? class_at(policy, v.cls) : nullptr;
  if (c != nullptr) {
    const bool young = v.runtime_s < c->min_runtime_s;
    const uint64_t runtime = static_cast<uint64_t>(std::clamp<int64_t>(v.runtime_s, 0, 0xfffe));
    rank = (uint64_t{young} << 31) + (std::min<uint64_t>(c->priority, 0x7fff) << 16) + runtime;
  } else {
    rank = (std::min<uint64_t>(v.qos_priority, kMax16) << 16) +
           std::min<uint64_t>(v.node_count, kMax16);
  }
  return static_cast<uint32_t>(std::min<uint64_t>(rank + 1, std::numeric_limits<uint32_t>::max()));
}

uint32_t ClaimTracker::observe(uint32_t victim, int64_t run_start, bool in_grace,
                               uint32_t preemptor) {
  if (!in_grace) {
    // A new run (requeued and started again) has no grace yet.
    entries_[victim] = Entry{preemptor, 0, run_start};
    return 0;
  }
  auto it = entries_.find(victim);
  if (it == entries_.end()) return 0;       // in a grace we did not see start (a restart): anyone's
  if (it->second.run_start != run_start) {  // seen in an earlier run: not this grace's
    entries_.erase(it);
    return 0;
  }
  if (it->second.claim == 0) it->second.claim = it->second.seen_by;
  return it->second.claim;
}

uint32_t ClaimTracker::claim_of(uint32_t victim) const {
  auto it = entries_.find(victim);
  return it == entries_.end() ? 0 : it->second.claim;
}

void ClaimTracker::retain(const std::vector<uint32_t>& running_sorted) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (std::binary_search(running_sorted.begin(), running_sorted.end(), it->first)) {
      ++it;
    } else {
      it = entries_.erase(it);
    }
  }
  kept_ = entries_.size();
}

PassRequests::Seen PassRequests::sighted(uint32_t preemptor, uint32_t victim, PreemptReason reason,
                                         uint64_t tester, int64_t now_ms, Waiting* settled) {
  if (preemptor == 0 || remember_ == 0) return Seen::Again;
  if (const auto w = waiting_.find(preemptor); w != waiting_.end()) {
    if (w->second.tester == tester) return Seen::Again;  // the same thread's next sweep
    if (settled != nullptr) *settled = w->second;
    waiting_.erase(w);
    return Seen::Tested;
  }
  if (!seen_.insert(preemptor).second) return Seen::Again;
  order_.push_back(preemptor);
  if (order_.size() > remember_) {
    // A forgotten job still waiting keeps its entry: it leaves at its due time.
    seen_.erase(order_.front());
    order_.pop_front();
  }
  waiting_[preemptor] = Waiting{preemptor, victim, reason, tester, now_ms + delay_ms_};
  return Seen::First;
}

std::optional<PassRequests::Waiting> PassRequests::settle(uint32_t preemptor) {
  const auto w = waiting_.find(preemptor);
  if (w == waiting_.end()) return std::nullopt;
  Waiting settled = w->second;
  waiting_.erase(w);
  return settled;
}

std::vector<PassRequests::Waiting> PassRequests::take_due(int64_t now_ms) {
  std::vector<Waiting> due;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->second.due_ms <= now_ms) {
      due.push_back(it->second);
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  std::sort(due.begin(), due.end(), [](const Waiting& a, const Waiting& b) {
    return a.due_ms != b.due_ms ? a.due_ms < b.due_ms : a.preemptor < b.preemptor;
  });
  return due;
}

int64_t PassRequests::next_due_ms(int64_t now_ms) const {
  if (waiting_.empty()) return -1;
  int64_t earliest = INT64_MAX;
  for (const auto& [id, w] : waiting_) earliest = std::min(earliest, w.due_ms);
  return earliest <= now_ms ? 0 : earliest - now_ms;
}

std::vector<QuotaLine> quota_lines(const Policy& policy, const std::vector<ListedJob>& jobs) {
  std::vector<QuotaRunningJob> running;
  std::vector<QuotaLine> lines;
  for (const auto& q : policy.quotas) {
    QuotaLine& l = lines.emplace_back();
    l.project = q.account;
    l.pool = q.partitions.empty() ? std::string("*") : join(q.partitions, ',');
    l.quota = q.gpus;
    l.limit = q.limit;
  }
  for (const auto& j : jobs) {
    const int project = policy.quota_index(j.account);
    if (project < 0) continue;
    // A pending job listed with several partitions counts when any of them is in the pool.
    bool counted = false;
    std::string_view parts = j.partition;
    while (!parts.empty() && !counted) {
      const auto comma = parts.find(',');
      counted =
          policy.quotas[static_cast<std::size_t>(project)].counts_partition(parts.substr(0, comma));
      parts = comma == std::string_view::npos ? std::string_view() : parts.substr(comma + 1);
    }
    if (!counted) continue;
    if (!j.running) {
      lines[static_cast<std::size_t>(project)].pending += j.gpus;
      continue;
    }
    running.push_back({j.job_id, project, policy.class_index(j.qos), j.gpus, true, j.start_time});
  }
  const QuotaSnapshot s = build_quota_snapshot(policy, running);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    lines[i].used = s.projects[i].used;
    lines[i].nonpreemptible = s.projects[i].nonpreemptible;
    lines[i].borrowed = s.projects[i].borrowed;
  }
  return lines;
}

double over_quota_key(const Quota& quota, uint64_t ahead, uint64_t gpus) {
  const uint64_t wanted = ahead + gpus;
  const uint64_t q = quota.gpus > 0 ? static_cast<uint64_t>(quota.gpus) : 0;
  if (wanted <= q) return 0.0;
  if (quota.over_quota_weight == 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(wanted - q) / static_cast<double>(quota.over_quota_weight);
}

double over_quota_factor(double key) {
  if (!(key > 0.0)) return 1.0;  // also NaN: never lower a job on a bad key
  if (std::isinf(key)) return 0.0;
  return 1.0 / (1.0 + key);
}

std::vector<uint64_t> assign_over_quota_keys(const Policy& policy, std::vector<uint64_t> used,
                                             std::vector<PendingQuotaJob>& jobs) {
  used.resize(policy.quotas.size(), 0);
  std::sort(jobs.begin(), jobs.end(), [](const PendingQuotaJob& a, const PendingQuotaJob& b) {
    return std::tie(a.project, a.job_id) < std::tie(b.project, b.job_id);
  });
  for (auto& j : jobs) {
    const Quota* q = quota_at(policy, j.project);
    if (q == nullptr) {
      j.key = 0.0;
      continue;
    }
    uint64_t& ahead = used[static_cast<std::size_t>(j.project)];
    j.key = over_quota_key(*q, ahead, j.gpus);
    ahead += j.gpus;
  }
  return used;
}

void OverQuotaLedger::reset(std::shared_ptr<const Policy> policy, std::vector<uint64_t> counted,
                            const std::vector<PendingQuotaJob>& jobs) {
  policy_ = std::move(policy);
  counted_ = std::move(counted);
  if (policy_) counted_.resize(policy_->quotas.size(), 0);
  keys_.clear();
  keys_.reserve(jobs.size());
  for (const auto& j : jobs) keys_[j.job_id] = j.key;
}

double OverQuotaLedger::key(const std::shared_ptr<const Policy>& policy, uint32_t job_id,
                            int project, uint64_t gpus) {
  if (policy == nullptr) return 0.0;
  if (policy != policy_) reset(policy, {}, {});
  if (auto it = keys_.find(job_id); it != keys_.end()) return it->second;
  const Quota* q = quota_at(*policy, project);
  if (q == nullptr) return 0.0;
  uint64_t& ahead = counted_[static_cast<std::size_t>(project)];
  const double k = over_quota_key(*q, ahead, gpus);
  ahead += gpus;
  keys_[job_id] = k;
  return k;
}

}  // namespace sp
