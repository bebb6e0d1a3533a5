// lib/watch_events: the watcher's event queue (bounded, never blocking a publisher) and the
// lock-hold statistics; plugins/common/ctld_bus: the process-wide instances and the waker.
#include "watch_events.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <string>
#include <thread>

#include "ctld_bus.hpp"
#include "hold_budget.hpp"

namespace sp {
namespace {

WatchEvent grace(uint32_t job, uint32_t by = 0) {
  WatchEvent e;
  e.job_id = job;
  e.preemptor = by;
  e.at = 1000 + job;
  return e;
}

TEST(WatchEventQueue, DrainsInOrderAndEmpties) {
  WatchEventQueue q(8);
  q.push(grace(1, 9));
  q.push(grace(2));
  std::vector<WatchEvent> out{grace(7)};
  EXPECT_EQ(q.drain(out), 0U);
  ASSERT_EQ(out.size(), 3U);  // appended to what was there
  EXPECT_EQ(out[1], grace(1, 9));
  EXPECT_EQ(out[2], grace(2));
  EXPECT_EQ(q.size(), 0U);
}

TEST(WatchEventQueue, PastItsCapacityTheOldestGoAndAreCounted) {
  WatchEventQueue q(3);
  for (uint32_t i = 1; i <= 5; ++i) q.push(grace(i));
  std::vector<WatchEvent> out;
  EXPECT_EQ(q.drain(out), 2U);
  ASSERT_EQ(out.size(), 3U);
  EXPECT_EQ(out.front().job_id, 3U);
  EXPECT_EQ(q.drain(out), 0U);  // counted once
}

TEST(WatchEventQueue, ManyPublishersLoseNothingWithinCapacity) {
  WatchEventQueue q(100000);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&q, t] {
      for (uint32_t i = 0; i < 1000; ++i) q.push(grace(t * 1000 + i + 1));
    });
  }
  for (auto& t : threads) t.join();
  std::vector<WatchEvent> out;
  EXPECT_EQ(q.drain(out), 0U);
  EXPECT_EQ(out.size(), 4000U);
}

TEST(PreemptedRuns, AWatchedRunKilledAtItsGraceEndIsKeptWithItsEndUntilTaken) {
  PreemptedRuns runs;
  runs.graced(7, 1000, 1500, 1530, /*watched=*/true);
  EXPECT_FALSE(runs.ended(7, 999, 1531, false));  // another run of the job
  EXPECT_FALSE(runs.ended(8, 1000, 1531, false));
  EXPECT_TRUE(runs.ended(7, 1000, 1531, false));
  EXPECT_TRUE(runs.ended(7, 1000, 1540, false));  // told again: the first end is kept
  const auto r = runs.find(7, 1000);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, (PreemptedRuns::Run{7, 1000, 1500, 1530, 1531, true}));
  runs.take(7, 1000);
  EXPECT_FALSE(runs.find(7, 1000));
  EXPECT_EQ(runs.size(), 0U);
}

TEST(PreemptedRuns, ClearForgetsEveryRun) {
  PreemptedRuns runs;
  runs.graced(1, 10, 20, 50, true);
  runs.remember(2, 10, 20, 50);
  ASSERT_EQ(runs.size(), 2U);
  runs.clear();
  EXPECT_EQ(runs.size(), 0U);
  EXPECT_FALSE(runs.find(1, 10));
  EXPECT_FALSE(runs.ended(2, 10, 50, false));
  runs.graced(1, 10, 20, 50, true);  // noted again after a clear
  EXPECT_TRUE(runs.find(1, 10));
}

TEST(PreemptedRuns, ARunNotKilledOrNotWatchedIsForgottenAtItsEnd) {
  PreemptedRuns runs;
  runs.graced(1, 10, 20, 50, true);
  EXPECT_FALSE(runs.ended(1, 10, 49, false));  // requeued itself in its grace
  EXPECT_FALSE(runs.find(1, 10));
  runs.graced(2, 10, 20, 50, true);
  EXPECT_FALSE(runs.ended(2, 10, 55, true));  // exited (saved), late as it may be
  EXPECT_FALSE(runs.find(2, 10));
  runs.graced(3, 10, 20, 50, false);  // no promise: the watcher never settles it
  EXPECT_TRUE(runs.ended(3, 10, 50, false));
  EXPECT_FALSE(runs.find(3, 10));
  runs.graced(4, 10, 20, 20, false);  // grace 0: killed in the call that preempts it
  EXPECT_TRUE(runs.ended(4, 10, 20, false));
  EXPECT_EQ(runs.size(), 0U);
}

TEST(PreemptedRuns, AGraceAgainReplacesTheRunsRecordARememberedOneDoesNot) {
  PreemptedRuns runs;
  runs.graced(7, 1000, 1500, 1530, true);
  runs.graced(7, 1000, 1600, 1600, true);  // a later preemption of the same run, grace 0
  EXPECT_EQ(runs.size(), 1U);
  EXPECT_EQ(runs.find(7, 1000)->grace_end, 1600);
  EXPECT_TRUE(runs.ended(7, 1000, 1600, false));
  runs.remember(7, 1000, 1500, 1530);  // the watcher's saved record, after its end: kept as is
  EXPECT_EQ(runs.find(7, 1000)->ended, 1600);
  runs.remember(8, 2000, 2100, 2130);  // not noted (a restart forgot it): noted, watched
  EXPECT_EQ(runs.find(8, 2000), (PreemptedRuns::Run{8, 2000, 2100, 2130, 0, true}));
}

TEST(PreemptedRuns, PastItsCapacityTheOldestNotedGo) {
  PreemptedRuns runs(2);
  runs.graced(1, 10, 11, 11, true);
  for (uint32_t id = 100; id < 400; ++id) {  // noted and settled: they take no one's place
    runs.graced(id, 1, 2, 3, true);
    runs.take(id, 1);
  }
  EXPECT_TRUE(runs.find(1, 10));
  runs.graced(2, 20, 21, 21, true);
  runs.graced(3, 30, 31, 31, true);
  EXPECT_EQ(runs.size(), 2U);
  EXPECT_FALSE(runs.find(1, 10));  // the oldest noted
  EXPECT_TRUE(runs.find(2, 20));
  EXPECT_TRUE(runs.find(3, 30));
  PreemptedRuns none(0);
  none.graced(1, 10, 11, 11, true);
  EXPECT_FALSE(none.find(1, 10));
}

TEST(CtldBus, KeepsACopyOfTheLastPolicyLoaded) {
  Policy p;
  p.source = "/etc/slurm/preempt.yaml";
  bus::remember_policy(p);
  const auto first = bus::last_policy();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->source, p.source);
  EXPECT_NE(first.get(), &p);  // a copy: the caller's may go with its plugin
  p.source = "/etc/slurm/other.yaml";
  bus::remember_policy(p);
  EXPECT_EQ(bus::last_policy()->source, "/etc/slurm/other.yaml");
  EXPECT_EQ(first->source, "/etc/slurm/preempt.yaml");  // a holder keeps what it took
}

TEST(CtldBus, KeepsOnePreemptedRunsRegistryThatAnyCallerReaches) {
  EXPECT_EQ(&bus::preempted_runs(), &bus::preempted_runs());
  bus::preempted_runs().graced(4242, 77, 80, 90, true);
  EXPECT_TRUE(bus::preempted_runs().ended(4242, 77, 95, false));
  EXPECT_TRUE(bus::preempted_runs().find(4242, 77));
  bus::preempted_runs().take(4242, 77);
  EXPECT_FALSE(bus::preempted_runs().find(4242, 77));
}

TEST(LockStats, BucketsAreAQuarterOfTheirPowerOfTwoWide) {
  // Each value lies below its bucket's upper bound and at or above the one before it.
  for (uint64_t us = 0; us < 70'000; ++us) {
    const std::size_t b = LockStats::bucket_of(us);
    ASSERT_LT(us, LockStats::bucket_upper_us(b)) << us;
    if (b > 0) {
      ASSERT_GE(us, LockStats::bucket_upper_us(b - 1)) << us;
    }
  }
  EXPECT_EQ(LockStats::bucket_upper_us(LockStats::bucket_of(45)), 48U);  // 32-64 in four
  EXPECT_EQ(LockStats::bucket_upper_us(LockStats::bucket_of(48)), 56U);
  EXPECT_EQ(LockStats::bucket_upper_us(LockStats::bucket_of(63)), 64U);
  EXPECT_EQ(LockStats::bucket_upper_us(LockStats::bucket_of(64)), 80U);
  EXPECT_EQ(LockStats::bucket_upper_us(LockStats::bucket_of(3)), 4U);
  EXPECT_EQ(LockStats::bucket_upper_us(LockStats::bucket_of(4)), 5U);
  // Past 2^32 us everything is in the last bucket.
  EXPECT_EQ(LockStats::bucket_of(uint64_t{1} << 40), LockStats::kBuckets - 1);
  EXPECT_EQ(LockStats::bucket_of(~uint64_t{0}), LockStats::kBuckets - 1);
  EXPECT_EQ(LockStats::bucket_upper_us(LockStats::kBuckets - 1), uint64_t{1} << 32);
}

TEST(LockStats, KeepsCountMaximumAndPercentilesPerSite) {
  LockStats s;
  const std::size_t visit = s.slot("watcher visit", LockStats::Kind::Write);
  const std::size_t scan = s.slot("watcher scan", LockStats::Kind::Read);
  EXPECT_NE(visit, scan);
  EXPECT_EQ(s.slot("watcher visit", LockStats::Kind::Write), visit);  // the same site, slot
  for (int i = 0; i < 98; ++i) s.record(visit, 3000, 1000);           // 3 us wall, 1 us CPU
  s.record(visit, 900'000, 2000);         // 900 us wall (no core), 2 us CPU
  s.record(visit, 5'000'000, 4'000'000);  // 5 ms wall, 4 ms CPU
  const auto sites = s.snapshot();
  ASSERT_EQ(sites.size(), 2U);
  EXPECT_EQ(sites[0].name, "watcher visit");
  EXPECT_EQ(sites[0].kind, LockStats::Kind::Write);
  EXPECT_EQ(sites[0].count, 100U);
  EXPECT_EQ(sites[0].units, 100U);  // one unit per hold unless told
  EXPECT_EQ(sites[0].wall.max_ns, 5'000'000U);
  EXPECT_EQ(sites[0].wall.p50_us, 4U);     // 3 us is in [2, 4)
  EXPECT_EQ(sites[0].wall.p99_us, 1024U);  // the 99th of 100 is the 900 us one
  EXPECT_EQ(sites[0].wall.sum_ns, 98U * 3000 + 900'000 + 5'000'000);
  EXPECT_EQ(sites[0].cpu.max_ns, 4'000'000U);
  EXPECT_EQ(sites[0].cpu.p50_us, 2U);  // 1 us is in [1, 2)
  EXPECT_EQ(sites[0].cpu.p99_us, 4U);  // the 2 us one
  EXPECT_EQ(sites[0].cpu.sum_ns, 98U * 1000 + 2000 + 4'000'000);
  EXPECT_EQ(sites[1].count, 0U);
  EXPECT_EQ(LockStats::format(sites),
            "watcher visit write count=100 units=100 max_us=5000 p50_us<=4 p99_us<=1024 "
            "sum_us=6194 hist=4:98,1024:1,5120:1 cpu_max_us=4000 cpu_p50_us<=2 cpu_p99_us<=4 "
            "cpu_sum_us=4100 cpu_hist=2:98,4:1,4096:1 cpu_max_at=0 cpu_max_faults=0 "
            "cpu_max_vcsw=0 cpu_max_ivcsw=0 faults=0 cpu_max_unswitched_us=4000\n"
            "watcher scan read count=0 units=0 max_us=0 p50_us<=0 p99_us<=0 sum_us=0 hist= "
            "cpu_max_us=0 cpu_p50_us<=0 cpu_p99_us<=0 cpu_sum_us=0 cpu_hist= cpu_max_at=0 "
            "cpu_max_faults=0 cpu_max_vcsw=0 cpu_max_ivcsw=0 faults=0 cpu_max_unswitched_us=0\n");
}

TEST(LockStats, KeepsWhatTheKernelCountedInTheLongestCpuHoldAndTheFaultsOfAll) {
  LockStats s;
  const std::size_t submit = s.slot("job_submit", LockStats::Kind::Write);
  s.record(submit, 50'000, 40'000, 1, {2, 0, 0, 1000});
  // The longest wall time (it waited for a core) is not the longest CPU time.
  s.record(submit, 9'000'000, 60'000, 1, {0, 0, 3, 1001});
  s.record(submit, 1'500'000, 1'400'000, 1, {250, 1, 0, 1002});  // the longest CPU
  s.record(submit, 30'000, 20'000, 1, {7, 0, 0, 1003});
  const auto sites = s.snapshot();
  ASSERT_EQ(sites.size(), 1U);
  EXPECT_EQ(sites[0].cpu_max, (LockStats::HoldDetail{250, 1, 0, 1002}));
  EXPECT_EQ(sites[0].faults, 259U);
  EXPECT_EQ(sites[0].cpu_max_unswitched_ns, 40'000U);  // the 1.4 ms and the 60 us ones switched
  const std::string text = LockStats::format(sites);
  EXPECT_NE(text.find(" cpu_max_us=1400 "), std::string::npos) << text;
  EXPECT_NE(text.find(" cpu_max_at=1002 cpu_max_faults=250 cpu_max_vcsw=1 cpu_max_ivcsw=0 "
                      "faults=259 cpu_max_unswitched_us=40\n"),
            std::string::npos)
      << text;
}

TEST(LockStats, ASnapshotTakenWhileHoldsAreRecordedPairsTheLongestCpuHoldWithItsOwnDetail) {
  LockStats s;
  const std::size_t site = s.slot("job_submit", LockStats::Kind::Write);
  std::atomic<bool> done{false};
  // Two recording threads (RPC threads under Slurm's lock, the watcher): each hold's detail
  // names its own CPU time (at), every third hold is switched out.
  auto recorder = [&](uint64_t from) {
    for (uint64_t ns = from; ns < 200'000; ns += 2) {
      const bool switched = ns % 3 == 0;
      s.record(site, ns, ns, 1, {0, 0, switched ? 1U : 0U, static_cast<int64_t>(ns)});
    }
  };
  std::thread a(recorder, 1);
  std::thread b(recorder, 2);
  std::thread reader([&] {
    while (!done.load()) {
      const auto sites = s.snapshot();
      ASSERT_EQ(sites.size(), 1U);
      const LockStats::Site& got = sites[0];
      ASSERT_EQ(static_cast<uint64_t>(got.cpu_max.at), got.cpu.max_ns);
      ASSERT_LE(got.cpu_max_unswitched_ns, got.cpu.max_ns);
    }
  });
  a.join();
  b.join();
  done.store(true);
  reader.join();
  const LockStats::Site got = s.snapshot()[0];
  EXPECT_EQ(got.cpu.max_ns, 199'999U);
  EXPECT_EQ(got.cpu_max.at, 199'999);
  EXPECT_EQ(got.cpu_max_unswitched_ns, 199'999U);  // 199999 % 3 != 0: not switched
}

TEST(LockStats, CountsTheUnitsOfWorkOfEachHoldSoThatSumOverUnitsIsTheCostOfOne) {
  LockStats s;
  const std::size_t visit = s.slot("watcher visit", LockStats::Kind::Write);
  s.record(visit, 40'000, 30'000, 10);  // 10 jobs in 30 us of CPU
  s.record(visit, 20'000, 10'000, 0);   // a hold that visited nothing
  const auto sites = s.snapshot();
  ASSERT_EQ(sites.size(), 1U);
  EXPECT_EQ(sites[0].count, 2U);
  EXPECT_EQ(sites[0].units, 10U);
  EXPECT_EQ(sites[0].cpu.sum_ns / sites[0].units, 4000U);
}

TEST(LockStats, KeepsAReadAWriteAndANoLockSiteOfOneNameApart) {
  LockStats s;
  const std::size_t r = s.slot("x", LockStats::Kind::Read);
  const std::size_t w = s.slot("x", LockStats::Kind::Write);
  const std::size_t n = s.slot("x", LockStats::Kind::None);
  EXPECT_NE(r, w);
  EXPECT_NE(w, n);
  EXPECT_NE(r, n);
  s.record(n, 10'000, 9'000);
  const std::string text = LockStats::format(s.snapshot());
  EXPECT_NE(text.find("x read count=0 "), std::string::npos) << text;
  EXPECT_NE(text.find("x write count=0 "), std::string::npos) << text;
  EXPECT_NE(text.find("x none count=1 units=1 max_us=10 "), std::string::npos) << text;
}

TEST(LockStats, RecordsNothingOnceEverySlotIsTaken) {
  LockStats s;
  static const auto names = [] {  // sites must outlive the table
    std::array<std::string, LockStats::kSites> n;
    for (std::size_t i = 0; i < n.size(); ++i) n[i] = "site " + std::to_string(i);
    return n;
  }();
  for (const auto& n : names) {
    EXPECT_LT(s.slot(n.c_str(), LockStats::Kind::Write), LockStats::kSites);
  }
  EXPECT_EQ(s.slot("one too many", LockStats::Kind::Write), LockStats::kSites);
  s.record(LockStats::kSites, 1, 1);  // ignored, no crash
  EXPECT_EQ(s.snapshot().size(), LockStats::kSites);
}

TEST(HoldBudget, IsSpentAtOnceWithNoTimeLeftButOnlyAtTheUnitsItReadsTheClock) {
  const HoldBudget none(std::chrono::microseconds(0), 32);
  EXPECT_FALSE(none.spent(1));
  EXPECT_FALSE(none.spent(31));
  EXPECT_TRUE(none.spent(32));
  EXPECT_TRUE(none.spent(64));
  const HoldBudget every(std::chrono::microseconds(0));  // the watcher's: every unit
  EXPECT_TRUE(every.spent(1));
  const HoldBudget zero_step(std::chrono::microseconds(0), 0);  // taken as 1, never a division by 0
  EXPECT_TRUE(zero_step.spent(1));
}

TEST(HoldBudget, IsNotSpentBeforeItsTimeHasPassed) {
  const HoldBudget hour(std::chrono::hours(1));
  EXPECT_FALSE(hour.spent(1));
  EXPECT_FALSE(hour.spent(1000000));
}

TEST(CtldBus, PublishWakesTheRegisteredWatcherOnlyUntilItClearsItself) {
  int woken_a = 0;
  int woken_b = 0;
  auto wake = [](void* n) { ++*static_cast<int*>(n); };
  std::vector<WatchEvent> drained;
  (void)bus::events().drain(drained);
  bus::set_watcher_waker(wake, &woken_a);
  bus::publish(grace(41));
  EXPECT_EQ(woken_a, 1);
  // A reloaded plugin's new watcher registers before the old one goes; the old one's clear
  // leaves the new waker in place.
  bus::set_watcher_waker(wake, &woken_b);
  bus::clear_watcher_waker(&woken_a);
  bus::publish(grace(42));
  EXPECT_EQ(woken_a, 1);
  EXPECT_EQ(woken_b, 1);
  bus::clear_watcher_waker(&woken_b);
  bus::publish(grace(43));
  EXPECT_EQ(woken_b, 1);
  drained.clear();
  EXPECT_EQ(bus::events().drain(drained), 0U);
  ASSERT_EQ(drained.size(), 3U);
  EXPECT_EQ(drained[2].job_id, 43U);
}

TEST(ReconfigureNotices, ATellerCountsWhileLoadedAndEachReconfigureMovesTheCount) {
  ReconfigureNotices n;
  EXPECT_FALSE(n.has_teller());
  n.teller_loaded();
  EXPECT_TRUE(n.has_teller());
  const uint64_t before = n.count();
  n.told();
  n.told();
  EXPECT_EQ(n.count(), before + 2);
  n.teller_unloaded();
  EXPECT_FALSE(n.has_teller());
  EXPECT_EQ(n.count(), before + 2);  // what was told stays told
}

}  // namespace
}  // namespace sp
