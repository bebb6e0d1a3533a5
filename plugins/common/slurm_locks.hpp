// Every Slurm lock our code takes goes through one of these scoped objects, so no exception,
// early return or forgotten branch can leave slurmctld's or assoc_mgr's locks held. Slurm's
// order applies: a CtldLock before an AssocLock, released in reverse (destruction order of
// two locals declared in that order does exactly that).
//
// Rules for the code that runs inside one (README "Inside slurmctld"): no waiting for a thread,
// a file, a child process or the network; nothing that grows with the whole job list where
// Slurm itself does it every 30 s or less.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <ctime>

#include "ctld_bus.hpp"
#include "hold_budget.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/common/assoc_mgr.h"
#include "src/slurmctld/locks.h"
}

namespace sp {

// A site of our code that holds Slurm's locks (a string literal), as bus::lock_stats() counts
// it. Entry points Slurm calls often keep theirs in a static.
inline std::size_t lock_site(const char* name, LockStats::Kind kind) noexcept {
  return name != nullptr ? bus::lock_stats().slot(name, kind) : LockStats::kSites;
}

// This thread's CPU time so far, ns (0 if the clock cannot be read).
inline uint64_t thread_cpu_ns() noexcept {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000U + static_cast<uint64_t>(ts.tv_nsec);
}

// What the kernel has counted for this thread so far (LockStats::HoldDetail's counters; all 0
// if they cannot be read).
inline LockStats::HoldDetail thread_counters() noexcept {
  LockStats::HoldDetail d;
  rusage u{};
  if (getrusage(RUSAGE_THREAD, &u) != 0) return d;
  d.faults = static_cast<uint64_t>(u.ru_minflt) + static_cast<uint64_t>(u.ru_majflt);
  d.voluntary_switches = static_cast<uint64_t>(u.ru_nvcsw);
  d.involuntary_switches = static_cast<uint64_t>(u.ru_nivcsw);
  return d;
}

// Wall time, this thread's CPU time and its kernel counters since construction (a hold, a
// whole tick).
class CostClock {
 public:
  // What one reading found since construction.
  struct Since {
    uint64_t wall_ns = 0;
    uint64_t cpu_ns = 0;
    LockStats::HoldDetail detail;
  };
  // `on` false: reads no clock (a hold that records nothing). `counters` false: no kernel
  // counters (a lock wait), one syscall less at each end. The counters are read first and
  // last, outside the timed span.
  explicit CostClock(bool on = true, bool counters = true) noexcept
      : counters_(on && counters ? thread_counters() : LockStats::HoldDetail{}),
        with_counters_(on && counters),
        wall_(on ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{}),
        cpu_(on ? thread_cpu_ns() : 0) {}
  Since read() const noexcept {
    Since r;
    const uint64_t cpu = thread_cpu_ns();
    r.cpu_ns = cpu >= cpu_ ? cpu - cpu_ : 0;
    r.wall_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now() - wall_)
                                          .count());
    if (with_counters_) {
      const LockStats::HoldDetail now = thread_counters();
      const auto since = [](uint64_t a, uint64_t b) { return a >= b ? a - b : 0; };
      r.detail.faults = since(now.faults, counters_.faults);
      r.detail.voluntary_switches = since(now.voluntary_switches, counters_.voluntary_switches);
      r.detail.involuntary_switches =
          since(now.involuntary_switches, counters_.involuntary_switches);
    }
    r.detail.at = static_cast<int64_t>(time(nullptr));
    return r;
  }
  // Records a reading into `site` of bus::lock_stats().
  static void record(std::size_t site, const Since& r, uint64_t units = 1) noexcept {
    bus::lock_stats().record(site, r.wall_ns, r.cpu_ns, units, r.detail);
  }
  // Records the time since construction into `site` of bus::lock_stats().
  void record(std::size_t site, uint64_t units = 1) const noexcept { record(site, read(), units); }

 private:
  LockStats::HoldDetail counters_;
  bool with_counters_;
  std::chrono::steady_clock::time_point wall_;
  uint64_t cpu_;
};

// How long our code holds Slurm's locks at one site, in wall time and in this thread's CPU
// time, from construction to destruction, into bus::lock_stats() (sites: README
// "Performance"). `units(n)`: the work done in the hold (jobs visited), one by default.
class HoldTimer {
 public:
  // No site (a CtldLock that names none): no clock read at all.
  explicit HoldTimer(std::size_t site) noexcept : slot_(site), clock_(site < LockStats::kSites) {}
  ~HoldTimer() {
    if (slot_ < LockStats::kSites) clock_.record(slot_, units_);
  }
  void units(uint64_t n) noexcept { units_ = n; }
  // Records the hold at another site (what the hold turned out to do); none if it recorded none.
  void site(std::size_t s) noexcept {
    if (slot_ < LockStats::kSites) slot_ = s;
  }
  HoldTimer(const HoldTimer&) = delete;
  HoldTimer& operator=(const HoldTimer&) = delete;

 private:
  std::size_t slot_;
  CostClock clock_;
  uint64_t units_ = 1;
};

inline bool writes(const slurmctld_lock_t& l) noexcept {
  return l.conf == WRITE_LOCK || l.job == WRITE_LOCK || l.node == WRITE_LOCK ||
         l.part == WRITE_LOCK || l.fed == WRITE_LOCK;
}

// slurmctld's config/job/node/part/fed locks, in Slurm's order. With a `site`, the time they
// are held is recorded (HoldTimer); with a `wait_site`, the time spent waiting for them
// (a site of Kind::None: it holds nothing).
class CtldLock {
 public:
  explicit CtldLock(slurmctld_lock_t levels, const char* site = nullptr,
                    const char* wait_site = nullptr) noexcept
      : levels_(levels),
        timer_((acquire(levels_, wait_site),
                lock_site(site, writes(levels) ? LockStats::Kind::Write : LockStats::Kind::Read))) {
  }
  ~CtldLock() {
    unlock_slurmctld(levels_);  // before timer_'s destructor: the hold is over
  }
  void units(uint64_t n) noexcept { timer_.units(n); }  // the work done in this hold
  // The site this hold is recorded at, when it names one (what the hold turned out to do).
  void site(const char* name) noexcept {
    timer_.site(lock_site(name, writes(levels_) ? LockStats::Kind::Write : LockStats::Kind::Read));
  }
  CtldLock(const CtldLock&) = delete;
  CtldLock& operator=(const CtldLock&) = delete;

 private:
  static void acquire(slurmctld_lock_t levels, const char* wait_site) noexcept {
    const std::size_t wait = lock_site(wait_site, LockStats::Kind::None);
    const CostClock clock(wait < LockStats::kSites, false);  // a wait: no counters
    lock_slurmctld(levels);
    if (wait < LockStats::kSites) clock.record(wait);
  }

  slurmctld_lock_t levels_;
  HoldTimer timer_;
};

inline bool writes(const assoc_mgr_lock_t& l) noexcept {
  return l.assoc == WRITE_LOCK || l.file == WRITE_LOCK || l.qos == WRITE_LOCK ||
         l.res == WRITE_LOCK || l.tres == WRITE_LOCK || l.user == WRITE_LOCK ||
         l.wckey == WRITE_LOCK;
}

// assoc_mgr's locks (assoc, file, qos, res, tres, user, wckey). With a `site`, the time they
// are held is recorded (HoldTimer), as CtldLock's.
class AssocLock {
 public:
  explicit AssocLock(assoc_mgr_lock_t levels, const char* site = nullptr) noexcept
      : levels_(levels),
        timer_((assoc_mgr_lock(&levels_),
                lock_site(site, writes(levels) ? LockStats::Kind::Write : LockStats::Kind::Read))) {
  }
  ~AssocLock() {
    assoc_mgr_unlock(&levels_);  // before timer_'s destructor: the hold is over
  }
  AssocLock(const AssocLock&) = delete;
  AssocLock& operator=(const AssocLock&) = delete;

 private:
  assoc_mgr_lock_t levels_;
  HoldTimer timer_;
};

// The common read set: associations and QOS.
inline assoc_mgr_lock_t assoc_qos_read() noexcept {
  assoc_mgr_lock_t l = {};
  l.assoc = READ_LOCK;
  l.qos = READ_LOCK;
  return l;
}

}  // namespace sp
