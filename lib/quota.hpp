// Project quotas and priority classes: which running job may be preempted for which pending
// job, and in what order (preempt/quota). Pure functions over plain views; the preempt plugin
// fills the views from Slurm's job records and applies the answers.
//
// The rules, in order, for a running victim V and a pending preemptor P:
//  1. V already in a grace that another preemptor started is not taken again by P (P takes an
//     untouched victim instead; N preemptors arriving together do not queue behind one victim).
//  2. With quotas, a non-preemptible class (inference, build) is never a victim.
//  3. Slurm's QOS rules as preempt/qos gives them (P's QOS lists V's QOS in its Preempt list,
//     or PreemptMode=WITHIN): the plugin computes that answer and passes it in.
//  4. V's class is preemptible, and either
//     a. same project, P's class has the higher priority (a class preempts a lower one inside a
//        project), or
//     b. quota reclaim: V's project is over its quota with V (V is borrowing) and P's project
//        stays within its own quota with P.
// A project's running jobs fill its quota first by class (non-preemptible first, then higher
// priority), then by age (oldest first); what is beyond the quota is borrowing. So a reclaim
// takes the lowest class, then the youngest, and never a job inside the quota.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "policy.hpp"

namespace sp {

// A running job, for the per-pass quota snapshot.
struct QuotaRunningJob {
  uint32_t job_id = 0;
  int project = -1;      // index in Policy::quotas; -1: the account has no quota
  int cls = -1;          // index in Policy::classes; -1: its QOS is not a class
  uint64_t gpus = 0;     // GPUs allocated
  bool counted = false;  // runs in a partition its project's quota counts
  int64_t start_time = 0;
};

// What a pass needs to know about every project, and which running jobs are borrowing.
struct QuotaSnapshot {
  struct Project {
    uint64_t used = 0;            // GPUs of its jobs in its quota's partitions
    uint64_t nonpreemptible = 0;  // of which held by non-preemptible classes
    uint64_t borrowed = 0;        // GPUs beyond the quota
  };
  std::vector<Project> projects;    // by Policy::quotas index
  std::vector<uint32_t> borrowing;  // ids of running jobs beyond their project's quota, sorted
  bool is_borrowing(uint32_t job_id) const;
};

// Builds the snapshot. `jobs` is reordered.
QuotaSnapshot build_quota_snapshot(const Policy& policy, std::vector<QuotaRunningJob>& jobs);

// A possible victim, as preempt_p_preemptable sees it.
struct VictimView {
  uint32_t job_id = 0;
  bool running = false;
  bool qos_allows = false;  // Slurm's QOS rules (preempt/qos's answer) let the preemptor take it
  int project = -1;
  int cls = -1;
  bool borrowing = false;   // QuotaSnapshot::is_borrowing
  bool in_grace = false;    // already being preempted (Slurm set its preempt time)
  uint32_t claimed_by = 0;  // the preemptor its grace is for; 0: unknown
};

struct PreemptorView {
  uint32_t job_id = 0;
  int project = -1;
  int cls = -1;
  uint64_t gpus = 0;          // GPUs requested
  bool counted = false;       // the partition being tried is one its quota counts
  uint64_t project_used = 0;  // QuotaSnapshot::projects[project].used
};

enum class PreemptReason : uint8_t {
  None,            // not a victim for this preemptor
  Qos,             // Slurm's QOS Preempt list
  ClassInProject,  // a higher class of the same project
  QuotaReclaim,    // a project under its quota takes back borrowed GPUs
};
const char* reason_name(PreemptReason r);

// Whether Slurm's QOS Preempt list alone decides (no quotas): a victim it does not allow is
// then no victim, whatever its project or class, and may_preempt need not be asked.
inline bool qos_alone_decides(const Policy& policy) { return policy.quotas.empty(); }

// The decision; no allocation (it runs for every job of the job list, under Slurm's locks).
PreemptReason may_preempt(const VictimView& victim, const PreemptorView& preemptor,
                          const Policy& policy);

// Order of two pending jobs in Slurm's queue (preempt_p_job_preempt_check): true when `first`
// may preempt `second` by QOS or (with quotas) by class. Never true both ways.
bool preempts_in_queue(bool qos_allows, int first_cls, int second_cls, const Policy& policy);

// preempts_in_queue for one policy at the cost of two array reads: Slurm asks it for pairs of
// pending jobs about 2 N log N times per scheduling pass (sort_job_queue2), under the job lock.
// Each QOS id's class is looked up by name the first time the id is seen and kept (ids below
// kCachedQos; Slurm never gives a QOS id another name); no lock, no allocation. Many threads may
// ask at once: two first look-ups of one id store the same answer.
class QueueClasses {
 public:
  static constexpr std::size_t kCachedQos = 256;
  explicit QueueClasses(std::shared_ptr<const Policy> policy);
  // Whether the QOS rules alone decide (qos_alone_decides): then no class is asked.
  bool qos_alone() const noexcept { return qos_alone_; }
  // Policy::class_index of the QOS `name` whose id is `id` (-1: no class). `name` is a C
  // string as Slurm keeps it (nullptr: none), read only when the id's class is not kept yet:
  // a kept id costs one array read, not a strlen.
  int class_of(uint32_t id, const char* name) const;
  // preempts_in_queue(false, class of the first QOS, class of the second): the caller has
  // asked the QOS rules first. Inline: when the QOS rules alone decide, the answer is one read.
  bool preempts(uint32_t first_id, const char* first_name, uint32_t second_id,
                const char* second_name) const {
    return !qos_alone_ && preempts_by_class(first_id, first_name, second_id, second_name);
  }

 private:
  bool preempts_by_class(uint32_t first_id, const char* first_name, uint32_t second_id,
                         const char* second_name) const;

  std::shared_ptr<const Policy> policy_;
  bool qos_alone_;
  mutable std::array<std::atomic<int16_t>, kCachedQos> cls_{};  // class + 2; 0: not looked up
};

// The QueueClasses of the policy in force, for readers that take no lock: set() publishes a new
// one (at start and at each reload, from another thread); current() is what a reader uses. The
// replaced ones stay until retire_unused(), which the caller makes only when no reader can be
// inside current()'s answer (preempt/quota: holding the job write lock, since Slurm sorts its
// queue under the job lock).
class QueueOrder {
 public:
  void set(std::shared_ptr<const Policy> policy);
  const QueueClasses* current() const noexcept { return current_.load(std::memory_order_acquire); }
  // Frees every QueueClasses but the current one; returns how many.
  std::size_t retire_unused();
  std::size_t kept() const;

 private:
  std::atomic<const QueueClasses*> current_{nullptr};
  mutable std::mutex m_;  // set() and retire_unused()
  std::vector<std::unique_ptr<QueueClasses>> all_;
};

// Victim order (PREEMPT_DATA_PRIO; lower is taken first). A job already in its grace comes
// first (its own preemptor keeps waiting for it instead of taking another one); then, with
// quotas, class jobs by class priority, youngest first, those younger than their class'
// min_runtime last; other jobs (all jobs without quotas) as preempt/qos ranks them (QOS
// priority, then node count).
// Whether a class takes part in the victim order (victim_rank): only under quotas. Without,
// RankView::cls is not read, and a caller need not look it up.
inline bool ranks_by_class(const Policy& policy) { return !policy.quotas.empty(); }
struct RankView {
  bool in_grace = false;
  int cls = -1;  // read only when ranks_by_class
  int64_t runtime_s = 0;
  uint32_t qos_priority = 0;
  uint32_t node_count = 0;
  bool starving = false;  // protected by the anti-starvation policy: taken last
};
uint32_t victim_rank(const RankView& v, const Policy& policy);
inline constexpr uint32_t kStarvingRank = 0xffffffff;

// Anti-starvation, from the preemptions a job's story (AdminComment) notes
// ("slurm-preempt: preempted at T ...", note_preempted): the last one, how many fall within
// the policy's window before it, and whether that makes the job protected at `now` (until
// last + protect_for). Pure text, no allocation (it runs for each candidate victim).
struct Starvation {
  uint32_t recent = 0;      // preemptions within the window that ends at the last one
  int64_t last = 0;         // the last preemption, 0: none
  int64_t until = 0;        // protected until (0: not protected by the last one)
  bool protected_ = false;  // at `now`
  bool operator==(const Starvation&) const = default;
};
Starvation starvation_of(std::string_view story, int64_t now, const StarvationPolicy& p);
// "protected from preemption until T: preempted N times within W s, taken as a victim last"
std::string note_protected(const Starvation& s, const StarvationPolicy& p);

// Which preemptor a victim's grace is for. Slurm picks victims and starts their grace inside
// one call for one preemptor (select_nodes, under its job write lock): the last preemptor that
// saw a job as an untouched candidate is the one whose grace it is in. A victim is known by its
// run (job id and the run's start time): what was seen of an earlier run of a requeued job
// never claims the next one, so entries of jobs that stopped running are only memory, dropped
// when prune_due() says (every sweep asked Slurm for each entry: 400 lookups a submission
// once owner traffic had seen every running standby job, bench/submit_rate.py).
class ClaimTracker {
 public:
  // Called for each candidate (victim answered true, or in a grace) of the run that started
  // at `run_start`. Returns the claim.
  uint32_t observe(uint32_t victim, int64_t run_start, bool in_grace, uint32_t preemptor);
  uint32_t claim_of(uint32_t victim) const;
  // Drops what is known about jobs that no longer run (`running` sorted).
  void retain(const std::vector<uint32_t>& running_sorted);
  // The same, asking `still_running(victim)` for each job it knows.
  template <typename Pred>
  void retain_if(Pred still_running) {
    std::erase_if(entries_, [&](const auto& e) { return !still_running(e.first); });
    kept_ = entries_.size();
  }
  // Whether a retain is due: the entries doubled (plus kPruneSlack) since the last one, so
  // that its cost per observe() stays constant and the entries stay within twice the jobs
  // that run.
  bool prune_due() const { return entries_.size() > 2 * kept_ + kPruneSlack; }
  std::size_t size() const { return entries_.size(); }
  static constexpr std::size_t kPruneSlack = 64;

 private:
  struct Entry {
    uint32_t seen_by = 0;   // last preemptor that saw it untouched
    uint32_t claim = 0;     // set when first seen in a grace
    int64_t run_start = 0;  // the run it was seen in
  };
  std::unordered_map<uint32_t, Entry> entries_;  // by victim
  std::size_t kept_ = 0;                         // entries after the last retain
};

// Which preemptors get a scheduling pass asked for them. Slurm starts a victim's grace only in
// a scheduling pass, and a batch submission only queues one: slurmctld's background loop runs
// it batch_sched_delay (3 s by default) after its previous pass at the soonest. The first time
// a pending job is seen with a victim it may take (the test Slurm makes of every submission
// sees it), it waits kDelayMs: when Slurm's own scheduling (a sweep by another thread: the
// main scheduler, backfill) tests it meanwhile, or a victim's grace starts for it, no pass is
// asked; otherwise, once the delay is over, the plugin asks for one (Slurm's schedule()).
// Asking at once for every such job made slurmctld run one pass per owner submission under
// load, back to back under its job write lock (README, Performance). Never twice for one job;
// the last `remember` preemptors are kept.
class PassRequests {
 public:
  static constexpr int64_t kDelayMs = 500;
  static constexpr std::size_t kRemember = 4096;
  enum class Seen : uint8_t {
    Again,   // seen before (or no job): nothing to do
    First,   // first sighting: waits until now + delay
    Tested,  // was waiting and another thread's sweep tested it: settled, no pass
  };
  struct Waiting {
    uint32_t preemptor = 0;
    uint32_t victim = 0;
    PreemptReason reason = PreemptReason::None;
    uint64_t tester = 0;  // the thread whose sweep saw it first
    int64_t due_ms = 0;
  };
  explicit PassRequests(int64_t delay_ms = kDelayMs, std::size_t remember = kRemember)
      : delay_ms_(delay_ms), remember_(remember) {}

  // A sweep by thread `tester` found `victim` for `preemptor` at `now_ms` (a steady clock).
  // With Tested, `*settled` (when given) is what was waiting.
  Seen sighted(uint32_t preemptor, uint32_t victim, PreemptReason reason, uint64_t tester,
               int64_t now_ms, Waiting* settled = nullptr);
  // No pass is to be asked for `preemptor` (a victim's grace started in a sweep for it, or a
  // pass was asked at once): what was waiting for it, if anything; it waits no more.
  std::optional<Waiting> settle(uint32_t preemptor);
  // What waited until `now_ms` or longer, oldest first; it leaves the waiting set.
  std::vector<Waiting> take_due(int64_t now_ms);
  // Milliseconds from `now_ms` to the earliest due (0 when one is overdue); -1 when none waits.
  int64_t next_due_ms(int64_t now_ms) const;
  std::size_t waiting() const { return waiting_.size(); }
  std::size_t remembered() const { return seen_.size(); }

 private:
  int64_t delay_ms_;
  std::size_t remember_;
  std::deque<uint32_t> order_;  // oldest first
  std::unordered_set<uint32_t> seen_;
  std::unordered_map<uint32_t, Waiting> waiting_;
};

// Fair division of idle GPUs (over_quota_weight, KAI-Scheduler's rule). When several projects
// want more than their quota, each borrowing job gets a key: the GPUs its project would borrow
// once it and the project's jobs ahead of it run, over the project's weight. The priority
// plugin orders pending jobs by key (lowest first; within quota: 0), so a project of weight 2
// gets two GPUs of surplus for each one of a project of weight 1. Weight 0: its borrowing
// jobs come after everyone else's (key infinite).
double over_quota_key(const Quota& quota, uint64_t ahead, uint64_t gpus);
// The key as a factor in (0, 1] for the priority's weighted sum: 1 within quota, 0 for weight 0.
double over_quota_factor(double key);

// A pending job of a project, for one pass.
struct PendingQuotaJob {
  uint32_t job_id = 0;
  int project = -1;  // index in Policy::quotas; the job runs where its quota counts
  uint64_t gpus = 0;
  double key = 0;  // set by assign_over_quota_keys
};

// Gives every job its key: per project in submission (job id) order, after the project's
// running GPUs (`used`, by Policy::quotas index). `jobs` is reordered. Returns per project the
// GPUs counted (running and pending), from which jobs submitted before the next pass continue.
std::vector<uint64_t> assign_over_quota_keys(const Policy& policy, std::vector<uint64_t> used,
                                             std::vector<PendingQuotaJob>& jobs);

// The keys between two passes. A pass puts in what assign_over_quota_keys gave; a job the
// priority plugin meets between passes (submitted, requeued, released) keeps the pass's key or
// gets the next one after what its project has counted, which then counts it too. Until the
// next pass, jobs that ended still count (later jobs of their project come a little later).
class OverQuotaLedger {
 public:
  void reset(std::shared_ptr<const Policy> policy, std::vector<uint64_t> counted,
             const std::vector<PendingQuotaJob>& jobs);
  // `project` indexes `policy.quotas`; a policy other than the last pass' starts from zero.
  double key(const std::shared_ptr<const Policy>& policy, uint32_t job_id, int project,
             uint64_t gpus);
  std::size_t size() const { return keys_.size(); }

 private:
  std::shared_ptr<const Policy> policy_;
  std::vector<uint64_t> counted_;
  std::unordered_map<uint32_t, double> keys_;
};

// One project's line for `preemptctl quotas`.
struct QuotaLine {
  std::string project;
  std::string pool;  // partitions the quota counts, joined with ','; "*" for the whole cluster
  int64_t quota = 0;
  int64_t limit = -1;
  uint64_t used = 0;
  uint64_t nonpreemptible = 0;
  uint64_t borrowed = 0;
  uint64_t pending = 0;
};

// A job as squeue lists it, for the report.
struct ListedJob {
  uint32_t job_id = 0;
  std::string account;
  std::string partition;
  std::string qos;
  bool running = false;
  uint64_t gpus = 0;
  int64_t start_time = 0;
};
std::vector<QuotaLine> quota_lines(const Policy& policy, const std::vector<ListedJob>& jobs);

}  // namespace sp
