// What the slurmctld plugins tell the preemption watcher as it happens, so that the watcher
// looks at the few jobs that need it instead of walking the whole job list every second; and
// how long our code holds slurmctld's locks, measured where it takes them. Pure; the one
// process-wide instance of each lives in the shared library the slurmctld plugins link
// (plugins/common/ctld_bus.hpp).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sp {

struct WatchEvent {
  enum class Kind : uint8_t {
    GraceStart,   // preempt/quota: Slurm asked a victim's grace; its grace starts now
    Pause,        // job_submit/preempt: a pause started the job's grace
    RunEnd,       // priority/fairshare: a run ended (a requeue included; Slurm tells the
                  // priority plugin when AccountingStorageEnforce has limits)
    LimitUpdate,  // job_submit/preempt: an update of a running job's time limit or end time
  };
  Kind kind = Kind::GraceStart;
  uint32_t job_id = 0;
  uint32_t preemptor = 0;  // GraceStart: the job it gives way to (0: not known)
  int64_t at = 0;
  // The run the grace interrupts (its start and restart count), so the watcher knows it even
  // if the job requeues itself before the watcher looks.
  int64_t start = 0;
  uint32_t restarts = 0;
  // GraceStart: the grace Slurm was given (s). 0: Slurm requeues or cancels the job at once, in
  // the same call, so the watcher never sees it in a grace. -1: not said.
  int64_t grace = -1;
  // RunEnd: the run ended in a requeue (the job is pending again, in Slurm's requeue hold).
  bool requeued = false;
  bool operator==(const WatchEvent&) const = default;
};

// Whether an event of this kind tells the watcher of the job's current run (told_by in
// watch.hpp); the others only ask it to look at the job.
inline bool tells_a_run(WatchEvent::Kind k) {
  return k == WatchEvent::Kind::GraceStart || k == WatchEvent::Kind::Pause;
}

// Thread-safe and bounded: publishers run under Slurm's locks and never wait for the watcher.
// Past `capacity` undrained events the oldest are dropped and counted (the watcher's periodic
// scan of the job list finds what they told).
class WatchEventQueue {
 public:
  explicit WatchEventQueue(std::size_t capacity = 65536) : capacity_(capacity) {}
  void push(const WatchEvent& e);
  // Moves every queued event to the end of `out`; returns how many were dropped since the last
  // drain.
  std::size_t drain(std::vector<WatchEvent>& out);
  std::size_t size() const;

 private:
  mutable std::mutex m_;
  std::size_t capacity_;
  std::deque<WatchEvent> events_;
  std::size_t dropped_ = 0;
};

// Preempted runs and their grace ends, so that a run killed at its grace's end is known as one
// whoever killed it. preempt/quota notes each run as Slurm asks the victim's grace (the end
// Slurm gives it: now + grace, or the time limit's end if sooner; grace 0: now, Slurm requeues
// or cancels it in that call); priority/fairshare tells the run's end as Slurm reports it (a
// requeue included: preempt.c slurm_job_preempt, job_mgr.c _job_requeue_op, then
// acct_policy_job_fini), before the watcher has written any note of it, and learns whether it
// was killed (lib/refund.hpp killed_at_grace_end): by the watcher, by Slurm's own grace check
// when it came first, or at once. Only a watched run (a job with a checkpoint promise) that was
// killed is kept after its end, until the watcher takes it as it settles the run; the watcher
// notes again, after a slurmctld restart, the graces its saved records hold (remember).
// Thread-safe, one map lookup per call; bounded: past `capacity` runs the oldest noted go.
class PreemptedRuns {
 public:
  struct Run {
    uint32_t job_id = 0;
    int64_t start = 0;      // the run's start time
    int64_t preempted = 0;  // when its grace began
    int64_t grace_end = 0;  // the end Slurm gave it
    int64_t ended = 0;      // when the run ended killed at its grace end; 0: not (yet)
    bool watched = false;   // the watcher follows it (kept after a kill, for take)
    bool operator==(const Run&) const = default;
  };
  explicit PreemptedRuns(std::size_t capacity = 65536) : capacity_(capacity) {}
  // A grace begins (a record of the same run is replaced: a later preemption of it).
  void graced(uint32_t job_id, int64_t run_start, int64_t at, int64_t grace_end, bool watched);
  // The same from the watcher's saved record after a restart: added unless the run is noted.
  void remember(uint32_t job_id, int64_t run_start, int64_t at, int64_t grace_end);
  // The run ended at `at` (`exited`: by itself). Whether it was noted and killed at its grace
  // end; a watched run killed is kept with its end (the first told), any other is forgotten.
  bool ended(uint32_t job_id, int64_t run_start, int64_t at, bool exited);
  // The run as noted (nullopt: not noted, or forgotten).
  std::optional<Run> find(uint32_t job_id, int64_t run_start) const;
  // Forgets the run (the watcher settled it).
  void take(uint32_t job_id, int64_t run_start);
  // Forgets every run (this slurmctld gave control back: the runs are the primary's to note).
  void clear();
  std::size_t size() const;

 private:
  using Key = std::pair<uint32_t, int64_t>;
  void add(const Run& r);  // caller holds m_
  mutable std::mutex m_;
  std::size_t capacity_;
  std::map<Key, Run> runs_;
  std::deque<Key> order_;  // keys in the order noted (some forgotten already): what goes first
};

// Reconfigures, as the plugins Slurm calls at one tell them: priority/fairshare's
// priority_p_reconfig, which slurmctld calls after it has read slurm.conf again (a teller, loaded
// for the whole life of slurmctld); job_submit/preempt when a submission sees slurm.conf's stamp
// moved (a failed reconfigure too, which calls no priority plugin). With a teller loaded the
// watcher reads slurm.conf's stamp, under the config read lock, only when the count moved and at
// its scan, and sleeps while it has nothing to follow (watch.hpp idle_until); with none it looks
// every second. Lock-free.
class ReconfigureNotices {
 public:
  void teller_loaded() noexcept { tellers_.fetch_add(1); }
  void teller_unloaded() noexcept { tellers_.fetch_sub(1); }
  bool has_teller() const noexcept { return tellers_.load() > 0; }
  void told() noexcept { count_.fetch_add(1); }
  uint64_t count() const noexcept { return count_.load(); }

 private:
  std::atomic<int> tellers_{0};
  std::atomic<uint64_t> count_{0};
};

// What the kernel counted for the holding thread during one hold (getrusage RUSAGE_THREAD):
// page faults (minor and major; each may zero or read a page), voluntary context switches
// (it slept: a mutex, I/O) and involuntary ones (another task took its core), and when the
// hold ended (epoch seconds).
struct LockHoldDetail {
  uint64_t faults = 0;
  uint64_t voluntary_switches = 0;
  uint64_t involuntary_switches = 0;
  int64_t at = 0;
  bool operator==(const LockHoldDetail&) const = default;
};

// The longest and typical times our code holds slurmctld's locks, per site ("watcher visit",
// "recalculation", ...), and the cost of work that holds none (a whole watcher tick). Each
// site keeps, for the wall time and for the thread's CPU time of each hold: its maximum, its
// sum and a histogram of microseconds, four buckets to each power of two (bucket_of); and the
// units of work done in all holds (jobs visited, jobs recalculated), so sum / units is the
// cost of one unit. Wall time includes time the thread waited for a core (2 cores under 200
// slurmd in bench/scale.py); CPU time does not, but on a kernel without IRQ time accounting it
// holds the interrupts and softirqs served while the thread ran. For the hold with the longest
// CPU time a site also keeps what the kernel counted for the thread in it (HoldDetail: page
// faults, context switches) and when it ended, to find it in slurmctld.log; and each site the
// page faults of all its holds. Lock-free but for a new maximum's detail: recorded when a
// scoped lock is released.
class LockStats {
 public:
  static constexpr std::size_t kSites = 32;  // the plugins name 18 (test_build.py counts them)
  // Buckets 0-2: < 1, [1, 2), [2, 4) us; from 4 us on, each power of two [2^k, 2^(k+1)) is cut
  // in four buckets of 2^(k-2) us (32-64 us: 32-40, 40-48, 48-56, 56-64), so a percentile is
  // known within 25 %, up to 2^32 us (the last bucket also holds anything longer).
  static constexpr std::size_t kBuckets = 3 + 4 * 30;
  static std::size_t bucket_of(uint64_t us);
  // The bucket's upper bound (us, exclusive): 1, 2, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, ...
  static uint64_t bucket_upper_us(std::size_t bucket);
  // Read or Write: a hold of slurmctld's locks; None: work that holds none (a whole tick).
  enum class Kind : uint8_t { Read, Write, None };
  using HoldDetail = LockHoldDetail;
  // `site` must outlive the process (a string literal). Returns the site's slot, or kSites when
  // every slot is taken (then nothing is recorded).
  std::size_t slot(const char* site, Kind kind);
  void record(std::size_t slot, uint64_t wall_ns, uint64_t cpu_ns, uint64_t units = 1,
              const HoldDetail& detail = {});
  struct Measure {
    uint64_t max_ns = 0;
    uint64_t sum_ns = 0;
    uint64_t p50_us = 0;  // upper bound of the bucket holding the median
    uint64_t p99_us = 0;
    // Count per bucket (bucket_of), since the start: the difference of two snapshots gives the
    // holds between them (bench/scale.py per scale point).
    std::array<uint64_t, kBuckets> buckets{};
  };
  struct Site {
    std::string name;
    Kind kind = Kind::Read;
    uint64_t count = 0;
    uint64_t units = 0;
    Measure wall;
    Measure cpu;
    HoldDetail cpu_max;   // of the hold with the longest CPU time
    uint64_t faults = 0;  // page faults in all holds
    // The longest CPU time of a hold in which the thread neither slept nor was preempted:
    // without the scheduler's work and the interrupt that come with a preemption. Interrupts
    // served during the hold still count on a kernel without IRQ time accounting.
    uint64_t cpu_max_unswitched_ns = 0;
  };
  std::vector<Site> snapshot() const;
  // One line per site: "SITE write|read|none count=N units=U max_us=M p50_us<=A p99_us<=B
  // sum_us=S hist=b:n,... cpu_max_us=M cpu_p50_us<=A cpu_p99_us<=B cpu_sum_us=S cpu_hist=...
  // cpu_max_at=T cpu_max_faults=P cpu_max_vcsw=V cpu_max_ivcsw=I faults=Q
  // cpu_max_unswitched_us=X", each hist listing the non-empty buckets as upper-bound-in-us:count
  // (bucket_upper_us); the cpu_max_* fields the longest CPU hold's HoldDetail, faults the page
  // faults of all holds, cpu_max_unswitched_us Site's cpu_max_unswitched_ns.
  static std::string format(const std::vector<Site>& sites);

 private:
  struct Series {
    std::atomic<uint64_t> max_ns{0};
    std::atomic<uint64_t> sum_ns{0};
    std::array<std::atomic<uint64_t>, kBuckets> buckets{};
    void add(uint64_t ns);
    Measure read() const;
  };
  struct Slot {
    std::atomic<const char*> name{nullptr};
    std::atomic<Kind> kind{Kind::Read};
    std::atomic<uint64_t> units{0};
    std::atomic<uint64_t> faults{0};
    Series wall;
    Series cpu;
    // The maxima: read lock-free to see whether a hold may be a new one, written (and read
    // for a snapshot) under max_m, taken only then.
    mutable std::mutex max_m;
    std::atomic<uint64_t> cpu_max_ns{0};  // the hold cpu_max belongs to
    HoldDetail cpu_max;
    std::atomic<uint64_t> cpu_max_unswitched_ns{0};
  };
  std::mutex m_;  // only to claim a slot
  std::array<Slot, kSites> slots_;
};

}  // namespace sp
