#include "watch.hpp"

#include <gtest/gtest.h>

#include <csignal>

namespace sp {
namespace {

constexpr int64_t kStart = 1'000'000;
constexpr int64_t kLimit = kStart + 3600;  // the job's time-limit end
constexpr int64_t kLife = 120;             // cred_expire

JobCheckpoint promise(int64_t grace = 60, bool requeue = true) {
  JobCheckpoint c;
  c.signal = 10;
  c.grace_s = grace;
  c.lead_s = grace;
  c.requeue = requeue;
  return c;
}

WatchedJob running(const JobCheckpoint* p) {
  WatchedJob j;
  j.id = 7;
  j.state = WatchedJob::State::Running;
  j.promise = p;
  j.start = kStart;
  j.end = kLimit;
  j.time_limited = true;
  j.time_limit = 60;
  j.preempt_requeues = true;
  j.can_requeue = true;
  j.has_details = true;
  j.submit = kStart - 10;
  return j;
}

// A running job Slurm began preempting at `at` with its QOS grace `qos_grace`.
WatchedJob preempted(const JobCheckpoint* p, int64_t at, int64_t qos_grace) {
  WatchedJob j = running(p);
  j.preempt = at;
  j.end = at + qos_grace;
  return j;
}

RunRecord triggered_record(int64_t at, int64_t grace_end) {
  RunRecord r;
  r.start = kStart;
  r.triggered = true;
  r.preempt = at;
  r.grace_end = grace_end;
  return r;
}

TEST(Watch, ARunningManagedJobIsRememberedAndNothingElseHappens) {
  const auto p = promise();
  const WatchAction a = watch(running(&p), nullptr, kStart + 5, kLife);
  ASSERT_TRUE(a.keep);
  EXPECT_EQ(a.keep->start, kStart);
  EXPECT_FALSE(a.keep->triggered);
  EXPECT_FALSE(a.changes_job());
  EXPECT_FALSE(a.time_limit_signal);
}

TEST(Watch, AnUnmanagedJobIsNotRemembered) {
  const WatchAction a = watch(running(nullptr), nullptr, kStart + 5, kLife);
  EXPECT_FALSE(a.keep);
  EXPECT_FALSE(a.changes_job());
}

TEST(Watch, GraceStartTriggersOnceAndShortensToTheAskedGrace) {
  const auto p = promise(20);
  const int64_t at = kStart + 100;
  const WatchAction a = watch(preempted(&p, at, 60), nullptr, at + 1, kLife);
  EXPECT_TRUE(a.trigger);
  EXPECT_EQ(a.set_end, at + 20);
  ASSERT_TRUE(a.keep);
  EXPECT_TRUE(a.keep->triggered);
  EXPECT_EQ(a.keep->preempt, at);
  EXPECT_EQ(a.keep->grace_end, at + 20);
  // The next tick: already triggered, nothing more until the grace ends.
  WatchedJob later = preempted(&p, at, 60);
  later.end = at + 20;
  const WatchAction b = watch(later, &*a.keep, at + 5, kLife);
  EXPECT_FALSE(b.trigger);
  EXPECT_FALSE(b.changes_job());
}

TEST(Watch, AGraceLongerThanAskedIsNotLengthened) {
  const auto p = promise(60);
  const int64_t at = kStart + 100;
  const WatchAction a = watch(preempted(&p, at, 30), nullptr, at + 1, kLife);
  EXPECT_TRUE(a.trigger);
  EXPECT_EQ(a.set_end, 0);
  EXPECT_EQ(a.keep->grace_end, at + 30);
}

TEST(Watch, GraceEndKillsAndSettlesTheRun) {
  const auto p = promise(20);
  const int64_t at = kStart + 100;
  WatchedJob j = preempted(&p, at, 20);
  const RunRecord r = triggered_record(at, at + 20);
  const WatchAction a = watch(j, &r, at + 20, kLife);
  EXPECT_TRUE(a.kill);
  EXPECT_TRUE(a.note_killed);
  ASSERT_TRUE(a.keep);
  EXPECT_TRUE(a.keep->settled);
  // Before the end: no kill.
  EXPECT_FALSE(watch(j, &r, at + 19, kLife).kill);
}

// The gang scheduler suspended the job at `at` (Slurm set its preempt time then and keeps it)
// and resumed it later: no grace began. Neither the resumed run nor the scan sees one; the job
// runs to its time limit and gets its time-limit trigger as any other run.
TEST(Watch, APreemptionThatSuspendsBeginsNoGrace) {
  EXPECT_EQ(grace_preempt_time(kStart + 100, true), 0);
  EXPECT_EQ(grace_preempt_time(kStart + 100, false), kStart + 100);
  EXPECT_EQ(grace_preempt_time(0, false), 0);
  const auto p = promise(20);
  const int64_t at = kStart + 100;
  WatchedJob resumed = running(&p);
  resumed.preempt = grace_preempt_time(at, true);
  // Slurm leaves its end where it was (job_end_time_reset: "preemption in progress"), and its
  // own time-limit pass ends it there.
  resumed.end = kLimit;
  for (const int64_t now : {at + 1, at + 20, at + 700}) {
    const WatchAction a = watch(resumed, nullptr, now, kLife);
    EXPECT_FALSE(a.trigger) << now;
    EXPECT_FALSE(a.kill) << now;
    EXPECT_EQ(a.set_end, 0) << now;
    ASSERT_TRUE(a.keep);
    EXPECT_FALSE(a.keep->triggered);
    EXPECT_FALSE(needs_watching(resumed, &*a.keep, now, kLife));
  }
  EXPECT_TRUE(watch(resumed, nullptr, resumed.end - 20, kLife).time_limit_signal);
  ScanFacts f;
  f.managed = true;
  f.state = WatchedJob::State::Running;
  f.preempt = grace_preempt_time(at, true);
  f.start = kStart;
  f.time_limited = true;
  EXPECT_EQ(scan_verdict(f, kStart, at + 700, kLife, false), ScanVerdict::Skip);
  EXPECT_EQ(scan_verdict(f, kStart, at + 700, kLife, true), ScanVerdict::Skip);
  // The same job preempted with a grace (REQUEUE): the scan visits it, the visit triggers it.
  f.preempt = grace_preempt_time(at, false);
  EXPECT_EQ(scan_verdict(f, kStart, at + 700, kLife, false), ScanVerdict::Visit);
  resumed.preempt = grace_preempt_time(at, false);
  EXPECT_TRUE(watch(resumed, nullptr, at + 1, kLife).trigger);
}

// A grace the watcher saw start in this run goes on if the QOS' mode turns to suspend during
// it; any other record, or none, leaves the mode's answer as it is.
TEST(Watch, AGraceSeenStartingIsNotDroppedWhenTheModeTurnsToSuspend) {
  const RunRecord grace = triggered_record(kStart + 100, kStart + 120);
  EXPECT_FALSE(suspends_for_visit(true, &grace, kStart));
  EXPECT_TRUE(suspends_for_visit(true, &grace, kStart + 1));  // an earlier run's record
  RunRecord settled = grace;
  settled.settled = true;
  EXPECT_TRUE(suspends_for_visit(true, &settled, kStart));
  const RunRecord plain{.start = kStart, .time_limit_triggered = true};
  EXPECT_TRUE(suspends_for_visit(true, &plain, kStart));
  EXPECT_TRUE(suspends_for_visit(true, nullptr, kStart));
  EXPECT_FALSE(suspends_for_visit(false, nullptr, kStart));
  EXPECT_FALSE(suspends_for_visit(false, &plain, kStart));
}

TEST(GraceOver, OnlyARunningPreemptedJobAtOrPastItsGraceEnd) {
  const int64_t end = kStart + 120;
  EXPECT_TRUE(grace_over(true, kStart + 100, end, end));
  EXPECT_TRUE(grace_over(true, kStart + 100, end, end + 5));
  EXPECT_FALSE(grace_over(true, kStart + 100, end, end - 1));   // grace under way
  EXPECT_FALSE(grace_over(true, 0, end, end + 5));              // not preempted: its time limit
  EXPECT_FALSE(grace_over(false, kStart + 100, end, end + 5));  // no longer running
}

TEST(DueKill, SettledBeforeOnlyWhenTheRecordReadHadSettledThatRun) {
  RunRecord r = triggered_record(kStart + 100, kStart + 120);
  EXPECT_FALSE(due_kill(7, kStart, nullptr).settled_before);  // no record: an unmanaged job
  EXPECT_FALSE(due_kill(7, kStart, &r).settled_before);       // triggered, not settled
  r.settled = true;
  const DueKill k = due_kill(7, kStart, &r);
  EXPECT_TRUE(k.settled_before);
  EXPECT_EQ(k.id, 7U);
  EXPECT_EQ(k.start, kStart);
  EXPECT_FALSE(due_kill(7, kStart + 50, &r).settled_before);  // another run's record
}

TEST(DueKill, StillDueOnlyForTheSameRunStillRunningAndPreempted) {
  const DueKill k{7, kStart, false};
  EXPECT_TRUE(kill_still_due(k, true, kStart, kStart + 100));
  EXPECT_FALSE(kill_still_due(k, false, kStart, kStart + 100));      // ended by itself meanwhile
  EXPECT_FALSE(kill_still_due(k, true, kStart + 50, kStart + 120));  // a later run
  EXPECT_FALSE(kill_still_due(k, true, kStart, 0));  // requeue done: preempt_time cleared
}

TEST(DueKill, AMissedKillLeavesTheRunUnsettledSoTheNextVisitRequeuesItsExit) {
  const auto p = promise(20);
  const int64_t at = kStart + 100;
  const RunRecord r = triggered_record(at, at + 20);
  const WatchAction visit = watch(preempted(&p, at, 20), &r, at + 20, kLife);
  ASSERT_TRUE(visit.kill);
  ASSERT_TRUE(visit.keep && visit.keep->settled);
  const DueKill k = due_kill(7, kStart, &r);
  // The job exited in the moment between the visit's hold and the kill's.
  WatchedJob exited = preempted(&p, at, 20);
  exited.state = WatchedJob::State::Exited;
  ASSERT_FALSE(kill_still_due(k, false, kStart, at));  // the kill's hold finds it not running
  const RunRecord back = kill_missed(*visit.keep, k);
  EXPECT_FALSE(back.settled);
  EXPECT_TRUE(back.triggered);
  EXPECT_EQ(watch(exited, &back, at + 20, kLife).settle, Settle::RequeueExited);
  // Left settled, the exit would have been taken for the watcher's kill: never requeued.
  EXPECT_EQ(watch(exited, &*visit.keep, at + 20, kLife).settle, Settle::None);
}

TEST(DueKill, AMissedKillKeepsARecordSettledBeforeTheVisitAndAnotherRunsRecord) {
  RunRecord settled = triggered_record(kStart + 100, kStart + 120);
  settled.settled = true;
  EXPECT_TRUE(kill_missed(settled, DueKill{7, kStart, true}).settled);
  RunRecord later = settled;
  later.start = kStart + 200;  // not the run the visit killed
  EXPECT_TRUE(kill_missed(later, DueKill{7, kStart, false}).settled);
}

TEST(NextTickWait, OneSecondWithNoGraceUnderWay) {
  EXPECT_EQ(next_tick_wait_ms(0, 0, kStart, kStart * 1000 + 300), kTickMs);
}

TEST(NextTickWait, JustPastTheSecondAGraceEndsWhenThatIsSooner) {
  const int64_t end = kStart + 3;
  // 2.7 s before: a whole second first.
  EXPECT_EQ(next_tick_wait_ms(end, 0, kStart, kStart * 1000 + 300), kTickMs);
  // 0.7 s before: kTickLateMs past the second it ends.
  EXPECT_EQ(next_tick_wait_ms(end, 0, end - 1, end * 1000 - 700), 700 + kTickLateMs);
  // Less than kTickRetryMs to go: never a shorter sleep.
  EXPECT_EQ(next_tick_wait_ms(end, 0, end - 1, end * 1000 + kTickLateMs - 3), kTickRetryMs);
}

TEST(NextTickWait, AgainSoonWhileTimeStillTrailsThePreciseClock) {
  // The tick woke past the second on the precise clock, but time() read the second before and
  // the grace was still under way: the next wake is kTickRetryMs on, not a second.
  const int64_t end = kStart + 3;
  EXPECT_EQ(next_tick_wait_ms(end, 0, end - 1, end * 1000 + kTickLateMs + 1), kTickRetryMs);
  EXPECT_EQ(next_tick_wait_ms(end, 0, end - 1, end * 1000 + 999), kTickRetryMs);
}

TEST(NextTickWait, DueOnceTimeReachesTheGraceEnd) {
  // A tick that saw the grace under way took long enough for it to end since.
  const int64_t end = kStart + 3;
  EXPECT_EQ(next_tick_wait_ms(end, 0, end, end * 1000 + 400), kTickRetryMs);
  EXPECT_EQ(next_tick_wait_ms(end, 0, end + 2, (end + 2) * 1000), kTickRetryMs);
}

WatcherLoad idle_load() { return {.events = true, .reconfigures_told = true, .recovered = true}; }

TEST(IdleUntil, TheEarliestOfTheScanTheTimersAndTheStatsWhenNothingIsFollowed) {
  const WatcherLoad w = idle_load();
  EXPECT_EQ(idle_until(w, kStart + 30, 0, kStart + 10), kStart + 10);          // stats first
  EXPECT_EQ(idle_until(w, kStart + 5, 0, kStart + 10), kStart + 5);            // the scan first
  EXPECT_EQ(idle_until(w, kStart + 30, kStart + 3, kStart + 10), kStart + 3);  // a timer first
  EXPECT_EQ(idle_until(w, kStart + 30, kStart + 40, kStart + 10), kStart + 10);
}

TEST(IdleUntil, NoSleepWhileAnythingNeedsATickASecond) {
  WatcherLoad w = idle_load();
  w.following = true;  // a job in a grace, a requeue hold or draining
  EXPECT_EQ(idle_until(w, kStart + 30, 0, kStart + 10), 0);
  w = idle_load();
  w.events = false;  // only the scan every second finds grace starts
  EXPECT_EQ(idle_until(w, kStart + 30, 0, kStart + 10), 0);
  w = idle_load();
  w.reconfigures_told = false;  // only a look at slurm.conf every second finds a reconfigure
  EXPECT_EQ(idle_until(w, kStart + 30, 0, kStart + 10), 0);
  w = idle_load();
  w.recovered = false;  // the first scan, with its restart recovery, is not done
  EXPECT_EQ(idle_until(w, kStart + 30, 0, kStart + 10), 0);
  w = idle_load();
  w.recheck_conf = true;  // preempt.yaml is read again once its reconfigure's second is over
  EXPECT_EQ(idle_until(w, kStart + 30, 0, kStart + 10), 0);
}

TEST(ReadsSlurmConf, AnIdleTickWithATellerTakesNoLockElseItReads) {
  // (read before, a teller loaded, told since, recheck, scanning)
  EXPECT_FALSE(reads_slurm_conf(true, true, false, false, false));  // idle: no config lock
  EXPECT_TRUE(reads_slurm_conf(false, true, false, false, false));  // the first tick
  EXPECT_TRUE(reads_slurm_conf(true, false, false, false, false));  // nobody tells: every tick
  EXPECT_TRUE(reads_slurm_conf(true, true, true, false, false));    // a reconfigure was told
  EXPECT_TRUE(reads_slurm_conf(true, true, false, true, false));    // read again after its second
  EXPECT_TRUE(reads_slurm_conf(true, true, false, false, true));    // the scan: an untold one
}

TEST(IdleUntil, ASecondDueAtOnceIsStillIdle) {
  // A scan never run (next_scan 0) is due now: idle all the same, never 0 ("not idle").
  EXPECT_EQ(idle_until(idle_load(), 0, 0, 0), 1);
}

TEST(NextTickWait, IdleSleepsJustPastTheSecondSomethingIsDueFromOneSecondToKIdleMaxMs) {
  const int64_t due = kStart + 10;
  EXPECT_EQ(next_tick_wait_ms(0, due, kStart, kStart * 1000 + 300), 9700 + kTickLateMs);
  EXPECT_EQ(next_tick_wait_ms(0, kStart + 100, kStart, kStart * 1000), kIdleMaxMs);
  // Due within the second, or past (a tick that failed before its scan): a second, as the
  // watcher with something to follow, never a tick every kTickRetryMs.
  EXPECT_EQ(next_tick_wait_ms(0, due, due - 1, due * 1000 - 500), kTickMs);
  EXPECT_EQ(next_tick_wait_ms(0, due, due + 5, (due + 5) * 1000), kTickMs);
  EXPECT_EQ(next_tick_wait_ms(0, 1, kStart, kStart * 1000 + 300), kTickMs);
}

WatchEvent event(WatchEvent::Kind kind, uint32_t id, int64_t at, int64_t grace) {
  WatchEvent e;
  e.kind = kind;
  e.job_id = id;
  e.at = at;
  e.grace = grace;
  return e;
}

TEST(OrderVisits, EndedGracesFirstThenToldGracesThenTheRestEachById) {
  const int64_t at = kStart + 100;
  const int64_t now = at + 30;
  std::map<uint32_t, RunRecord> runs;
  runs[9] = triggered_record(at, at + 30);  // ends now: first
  runs[4] = triggered_record(at, at + 20);  // ended 10 s ago: first
  runs[2] = triggered_record(at, at + 60);  // under way: with the rest
  const std::vector<WatchEvent> events = {
      event(WatchEvent::Kind::GraceStart, 7, now, 20),  // just told: after the ended graces
      event(WatchEvent::Kind::Pause, 5, now, -1),       // a pause just told: likewise
      event(WatchEvent::Kind::RunEnd, 3, now, -1),      // only a look: with the rest
  };
  std::vector<uint32_t> ids = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  order_visits(ids, runs, events, now);
  EXPECT_EQ(ids, (std::vector<uint32_t>{4, 9, 5, 7, 1, 2, 3, 6, 8}));
}

TEST(OrderVisits, SettledOrUntriggeredRecordsAreNotEndedGraces) {
  const int64_t at = kStart + 100;
  const int64_t now = at + 30;
  std::map<uint32_t, RunRecord> runs;
  runs[3] = triggered_record(at, at + 20);
  runs[3].settled = true;  // killed already (or settled otherwise)
  RunRecord seen;          // kept for its time-limit trigger, never preempted
  seen.start = kStart;
  seen.time_limit_triggered = true;
  runs[2] = seen;
  runs[5] = triggered_record(at, 0);  // no grace end known
  runs[6] = triggered_record(at, at + 20);
  std::vector<uint32_t> ids = {2, 3, 5, 6};
  order_visits(ids, runs, {}, now);
  EXPECT_EQ(ids, (std::vector<uint32_t>{6, 2, 3, 5}));
}

TEST(OrderVisits, AGraceAnEventToldOfThatHasEndedComesFirst) {
  // The watcher first saw the grace after it ended (its tick waited for the locks): the event's
  // time plus its grace is past. A grace of 0 (Slurm preempted the job at once) has no kill
  // to come: only told. An event without a grace (-1) says nothing of its end.
  const int64_t now = kStart + 200;
  const std::vector<WatchEvent> events = {
      event(WatchEvent::Kind::GraceStart, 8, now - 9, 5),
      event(WatchEvent::Kind::GraceStart, 6, now, 0),
      event(WatchEvent::Kind::GraceStart, 4, now - 9, -1),
      event(WatchEvent::Kind::GraceStart, 2, now - 1, 5),
  };
  std::vector<uint32_t> ids = {1, 2, 4, 6, 8};
  order_visits(ids, {}, events, now);
  EXPECT_EQ(ids, (std::vector<uint32_t>{8, 2, 4, 6, 1}));
}

TEST(OrderVisits, AJobNamedByTwoEventsTakesItsMostUrgentPlace) {
  const int64_t now = kStart + 200;
  const std::vector<WatchEvent> events = {
      event(WatchEvent::Kind::RunEnd, 5, now, -1),
      event(WatchEvent::Kind::GraceStart, 5, now - 10, 5),
      event(WatchEvent::Kind::Pause, 5, now, -1),
  };
  std::vector<uint32_t> ids = {1, 3, 5};
  order_visits(ids, {}, events, now);
  EXPECT_EQ(ids, (std::vector<uint32_t>{5, 1, 3}));
  std::vector<uint32_t> none;
  order_visits(none, {}, events, now);
  EXPECT_TRUE(none.empty());
}

TEST(RunEndNeedsVisit, ARequeueOrAFollowedJobOnly) {
  EXPECT_TRUE(run_end_needs_visit(/*requeued=*/true, /*followed=*/false));  // requeue hold
  EXPECT_TRUE(run_end_needs_visit(/*requeued=*/false, /*followed=*/true));  // a record, a grace
  EXPECT_TRUE(run_end_needs_visit(/*requeued=*/true, /*followed=*/true));
  EXPECT_FALSE(run_end_needs_visit(/*requeued=*/false, /*followed=*/false));  // ended for good
}

TEST(GraceOver, AgreesWithWatchsKill) {
  // The watcher gives the visits this predicate names a hold of their own: watch() must kill
  // exactly then.
  const auto p = promise(20);
  const int64_t at = kStart + 100;
  const WatchedJob j = preempted(&p, at, 20);
  const RunRecord r = triggered_record(at, at + 20);
  for (int64_t now = at; now <= at + 25; ++now) {
    const bool due = grace_over(j.state == WatchedJob::State::Running, j.preempt, j.end, now);
    EXPECT_EQ(watch(j, &r, now, kLife).kill, due) << "at grace start + " << (now - at);
  }
  WatchedJob unmanaged = preempted(nullptr, at, 20);
  EXPECT_TRUE(watch(unmanaged, nullptr, at + 20, kLife).kill);
  EXPECT_TRUE(grace_over(true, unmanaged.preempt, unmanaged.end, at + 20));
}

TEST(Watch, AnUnmanagedPreemptedJobIsKilledAtItsGraceEndWithoutANote) {
  WatchedJob j = preempted(nullptr, kStart + 100, 10);
  const WatchAction a = watch(j, nullptr, kStart + 110, kLife);
  EXPECT_TRUE(a.kill);
  EXPECT_FALSE(a.note_killed);
  EXPECT_FALSE(a.keep);
}

TEST(Watch, ExitDuringTheGraceIsRequeuedNeverCompleted) {
  const auto p = promise();
  const int64_t at = kStart + 100;
  WatchedJob j = preempted(&p, at, 60);
  j.state = WatchedJob::State::Exited;
  const RunRecord r = triggered_record(at, at + 60);
  const WatchAction a = watch(j, &r, at + 10, kLife);
  EXPECT_EQ(a.settle, Settle::RequeueExited);
  ASSERT_TRUE(a.keep);
  EXPECT_TRUE(a.keep->settled);
  // The tombstone keeps a second settle away, at the next tick or after a restart.
  const WatchAction again = watch(j, &*a.keep, at + 11, kLife);
  EXPECT_EQ(again.settle, Settle::None);
  EXPECT_TRUE(again.keep);
}

TEST(Watch, ExitDuringTheGraceOfAJobThatMayNotRequeueIsNotedOnly) {
  const auto p = promise(60, /*requeue=*/false);
  const int64_t at = kStart + 100;
  WatchedJob j = preempted(&p, at, 60);
  j.state = WatchedJob::State::Exited;
  const RunRecord r = triggered_record(at, at + 60);
  EXPECT_EQ(watch(j, &r, at + 10, kLife).settle, Settle::ExitedNoRequeue);
  const auto q = promise();
  j.promise = &q;
  j.can_requeue = false;  // --no-requeue, or not a batch job
  EXPECT_EQ(watch(j, &r, at + 10, kLife).settle, Settle::ExitedNoRequeue);
}

TEST(WatchFinished, AJobThatSaidItsWorkIsFinishedAndExits0InItsGraceIsNotRequeued) {
  const auto p = promise();
  const int64_t at = kStart + 100;
  WatchedJob j = preempted(&p, at, 60);
  j.state = WatchedJob::State::Exited;
  j.said_finished = true;
  const RunRecord r = triggered_record(at, at + 60);
  WatchAction a = watch(j, &r, at + 10, kLife);
  EXPECT_EQ(a.settle, Settle::ExitedFinished);
  EXPECT_FALSE(a.hold);
  ASSERT_TRUE(a.keep);
  EXPECT_TRUE(a.keep->settled);  // settled once
  EXPECT_EQ(watch(j, &*a.keep, at + 11, kLife).settle, Settle::None);
  // Paused, it is done all the same: not requeued held.
  j.paused = true;
  a = watch(j, &r, at + 10, kLife);
  EXPECT_EQ(a.settle, Settle::ExitedFinished);
  EXPECT_FALSE(a.hold);
}

TEST(WatchFinished, AnyOtherExitIsRequeuedSoThatNothingIsLost) {
  const auto p = promise();
  const int64_t at = kStart + 100;
  WatchedJob j = preempted(&p, at, 60);
  j.state = WatchedJob::State::Exited;
  j.said_finished = true;
  j.exit_status = 1;  // said finished, then failed
  const RunRecord r = triggered_record(at, at + 60);
  EXPECT_EQ(watch(j, &r, at + 10, kLife).settle, Settle::RequeueExited);
  j.exit_status = 0;
  j.said_finished = false;  // the default: saved, requeue me
  EXPECT_EQ(watch(j, &r, at + 10, kLife).settle, Settle::RequeueExited);
  // Killed at the grace's end: it did not exit in time, so the kill's requeue stands.
  j = preempted(&p, at, 60);
  j.said_finished = true;
  const WatchAction a = watch(j, &r, at + 60, kLife);
  EXPECT_TRUE(a.kill);
  EXPECT_EQ(a.settle, Settle::None);
}

TEST(WatchPause, APausedJobsGraceEndRequeuesItHeld) {
  const auto p = promise(20);
  const int64_t at = kStart + 100;
  WatchedJob j = preempted(&p, at, 20);
  j.paused = true;
  const RunRecord r = triggered_record(at, at + 20);
  WatchAction a = watch(j, &r, at + 20, kLife);
  EXPECT_TRUE(a.kill);
  EXPECT_TRUE(a.hold);
  EXPECT_FALSE(a.hold_admin);
  j.paused_by_admin = true;
  a = watch(j, &r, at + 20, kLife);
  EXPECT_TRUE(a.hold && a.hold_admin);
  // A preemption (not paused) is requeued eligible, as before.
  j.paused = j.paused_by_admin = false;
  EXPECT_FALSE(watch(j, &r, at + 20, kLife).hold);
}

TEST(WatchPause, APausedJobSlurmRequeuedFirstIsHeldAllTheSame) {
  const auto p = promise(20);
  const int64_t at = kStart + 100;
  WatchedJob j = running(&p);
  j.state = WatchedJob::State::Pending;  // Slurm's own grace end requeued it (eligible)
  j.restarts = 1;
  j.paused = true;
  const RunRecord r = triggered_record(at, at + 20);
  const WatchAction a = watch(j, &r, at + 21, kLife);
  EXPECT_EQ(a.settle, Settle::RequeuedDuringGrace);
  EXPECT_TRUE(a.hold);
  EXPECT_FALSE(a.find_preemptor);
  j.paused = false;  // a preempted job that requeued itself: not held
  EXPECT_FALSE(watch(j, &r, at + 21, kLife).hold);
}

TEST(WatchPause, APausedJobThatSavesAndExitsIsRequeuedHeldEvenWithoutRequeuePromise) {
  const auto p = promise(60, /*requeue=*/false);  // a pause asked for the requeue
  const int64_t at = kStart + 100;
  WatchedJob j = preempted(&p, at, 60);
  j.state = WatchedJob::State::Exited;
  j.paused = true;
  const RunRecord r = triggered_record(at, at + 60);
  WatchAction a = watch(j, &r, at + 10, kLife);
  EXPECT_EQ(a.settle, Settle::RequeueExited);
  EXPECT_TRUE(a.hold);
  j.can_requeue = false;  // never requeued where Slurm cannot (refused at the pause anyway)
  a = watch(j, &r, at + 10, kLife);
  EXPECT_EQ(a.settle, Settle::ExitedNoRequeue);
  EXPECT_FALSE(a.hold);
}

// slurmctld died right after job_modify started a pause, before it saved the job's state: the
// job's story lost the pause note, the watcher's record has it. The run is still a pause.
TEST(WatchPause, APauseTheStoryLostInACrashIsStillAPauseAndItsNoteIsWrittenBack) {
  const auto p = promise(20);
  const int64_t at = kStart + 100;
  WatchedJob j = preempted(&p, at, 20);
  j.paused = true;
  j.pause_note = "paused by bob at 2026-11-24T02:44:34Z, grace 20 s";
  const WatchAction first = watch(j, nullptr, at, kLife);
  ASSERT_TRUE(first.trigger && first.keep);
  EXPECT_TRUE(first.keep->paused);
  EXPECT_EQ(first.keep->pause_note, j.pause_note);
  EXPECT_TRUE(first.restore_pause_note.empty());

  WatchedJob after = preempted(&p, at, 20);  // its story has no pause mark any more
  WatchAction a = watch(after, &*first.keep, at + 20, kLife);
  EXPECT_TRUE(a.kill);
  EXPECT_TRUE(a.hold);
  EXPECT_EQ(a.restore_pause_note, j.pause_note);
  EXPECT_TRUE(a.changes_job());
  after.state = WatchedJob::State::Exited;  // it saved and exited while slurmctld was down
  a = watch(after, &*first.keep, at + 5, kLife);
  EXPECT_EQ(a.settle, Settle::RequeueExited);
  EXPECT_TRUE(a.hold);
  // A later run of the job (resumed) is not paused by an old record.
  WatchedJob next = running(&p);
  next.start = at + 100;
  EXPECT_TRUE(watch(next, &*first.keep, at + 120, kLife).restore_pause_note.empty());
  // A preemption's record (not a pause) makes nothing paused.
  const RunRecord r = triggered_record(at, at + 20);
  EXPECT_FALSE(watch(preempted(&p, at, 20), &r, at + 20, kLife).hold);
}

// The same crash with an administrator's pause: the record keeps who paused, so the job is held
// as an administrator's (JobHeldAdmin), which its owner cannot release, not as the owner's.
TEST(WatchPause, AnAdministratorsPauseTheStoryLostInACrashStaysAnAdministratorsHold) {
  const auto p = promise(20);
  const int64_t at = kStart + 100;
  WatchedJob j = preempted(&p, at, 20);
  j.paused = true;
  j.paused_by_admin = true;
  j.pause_note = "paused by root at 2026-11-24T02:44:34Z, grace 20 s";
  const WatchAction first = watch(j, nullptr, at, kLife);
  ASSERT_TRUE(first.trigger && first.keep);
  EXPECT_TRUE(first.trigger_pause);  // the pause's trigger, not a preemption's
  EXPECT_TRUE(first.keep->paused && first.keep->paused_admin);

  WatchedJob after = preempted(&p, at, 20);  // its story has neither mark any more
  WatchAction a = watch(after, &*first.keep, at + 20, kLife);
  EXPECT_TRUE(a.kill);
  EXPECT_TRUE(a.hold && a.hold_admin);
  EXPECT_EQ(a.restore_pause_note, j.pause_note);
  after.state = WatchedJob::State::Exited;
  a = watch(after, &*first.keep, at + 5, kLife);
  EXPECT_EQ(a.settle, Settle::RequeueExited);
  EXPECT_TRUE(a.hold && a.hold_admin);
  // A user's pause lost the same way is the user's hold.
  RunRecord user = *first.keep;
  user.paused_admin = false;
  a = watch(after, &user, at + 5, kLife);
  EXPECT_TRUE(a.hold);
  EXPECT_FALSE(a.hold_admin);
  // A preemption's trigger is not a pause's.
  EXPECT_FALSE(watch(preempted(&p, at, 20), nullptr, at, kLife).trigger_pause);
}

// slurmctld died less than 5 s after the run started (its last state save had the job
// pending) and came back without the run: the job is pending, not requeued.
TEST(WatchPause, APausedRunSlurmLostInACrashIsHeldNotStartedAgain) {
  const auto p = promise(20);
  const int64_t at = kStart + 100;
  RunRecord r = triggered_record(at, at + 20);
  r.paused = true;
  r.pause_note = "paused by alice at 2026-11-24T03:36:06Z, grace 20 s";
  WatchedJob j = running(&p);
  j.state = WatchedJob::State::Pending;
  j.start = 0;
  WatchAction a = watch(j, &r, at + 4, kLife);
  EXPECT_EQ(a.settle, Settle::RunLost);
  EXPECT_TRUE(a.hold);
  EXPECT_EQ(a.restore_pause_note, r.pause_note);
  EXPECT_FALSE(a.hold_admin);
  ASSERT_TRUE(a.keep);
  EXPECT_TRUE(a.keep->settled);
  r.paused_admin = true;  // an administrator's pause is held as the administrator's
  EXPECT_TRUE(watch(j, &r, at + 4, kLife).hold_admin);
  r.paused_admin = false;
  // A preemption's run lost the same way runs again as Slurm decides: nothing held.
  r.paused = false;
  a = watch(j, &r, at + 4, kLife);
  EXPECT_EQ(a.settle, Settle::RunLost);
  EXPECT_FALSE(a.hold);
  // Requeued (restart count one up) is the ordinary case, not a lost run.
  j.restarts = 1;
  EXPECT_EQ(watch(j, &r, at + 4, kLife).settle, Settle::RequeuedDuringGrace);
}

TEST(Watch, AnExitSlurmIsRequeueingAlreadyIsLeftToSlurm) {
  const auto p = promise();
  WatchedJob j = preempted(&p, kStart + 100, 60);
  j.state = WatchedJob::State::Exited;
  j.requeue_in_hand = true;
  const RunRecord r = triggered_record(kStart + 100, kStart + 160);
  EXPECT_EQ(watch(j, &r, kStart + 110, kLife).settle, Settle::None);
}

TEST(Watch, AnExitOfAnotherRunThanTheRecordedOneIsNotSettled) {
  const auto p = promise();
  WatchedJob j = preempted(&p, kStart + 100, 60);
  j.state = WatchedJob::State::Exited;
  j.start = kStart + 50;  // a later run than the record's
  const RunRecord r = triggered_record(kStart + 100, kStart + 160);
  EXPECT_EQ(watch(j, &r, kStart + 110, kLife).settle, Settle::None);
}

TEST(Watch, ACancelledJobIsNotRequeued) {
  const auto p = promise();
  WatchedJob j = preempted(&p, kStart + 100, 60);
  j.state = WatchedJob::State::Other;
  const RunRecord r = triggered_record(kStart + 100, kStart + 160);
  EXPECT_EQ(watch(j, &r, kStart + 110, kLife).settle, Settle::None);
}

TEST(Watch, ASelfRequeueDuringTheGraceIsNotedAndItsLeftoversKilledAtGraceEnd) {
  const auto p = promise(30);
  const int64_t at = kStart + 100;
  WatchedJob j = running(&p);
  j.state = WatchedJob::State::Pending;
  j.restarts = 1;
  j.completing = true;
  j.end = at + 5;  // the requeue's time (Slurm's end time while it completes)
  const RunRecord r = triggered_record(at, at + 30);
  const WatchAction a = watch(j, &r, at + 5, kLife);
  EXPECT_EQ(a.settle, Settle::RequeuedDuringGrace);
  EXPECT_FALSE(a.find_preemptor);
  EXPECT_EQ(a.drain_until, at + 30);
}

// Slurm's own grace check requeued the job at its grace end (at + 30) before the watcher's
// visit: the job's record is still completing, its end time the requeue's.
WatchedJob requeued_by_slurm(const JobCheckpoint* p, int64_t ended) {
  WatchedJob j = running(p);
  j.state = WatchedJob::State::Pending;
  j.restarts = 1;
  j.completing = true;
  j.end = ended;
  return j;
}

TEST(WatchKilledBySlurm, ARequeueAtTheGraceEndIsTheKillNotTheJobsOwn) {
  const auto p = promise(30);
  const int64_t at = kStart + 100;
  const RunRecord r = triggered_record(at, at + 30);
  const WatchAction a = watch(requeued_by_slurm(&p, at + 30), &r, at + 31, kLife);
  EXPECT_EQ(a.settle, Settle::KilledAtGraceEnd);
  EXPECT_EQ(a.preempted_at, at);
  EXPECT_EQ(a.killed_at, at + 30);
  EXPECT_TRUE(a.requeued);
  EXPECT_EQ(a.restart, 1u);
  EXPECT_TRUE(a.account_run);     // still completing: the preempted run's record is the job's
  EXPECT_TRUE(a.kill_leftovers);  // what Slurm's TERM left goes now, not after KillWait
  EXPECT_EQ(a.drain_until, 0);
  EXPECT_FALSE(a.find_preemptor);
  EXPECT_FALSE(a.note_unseen_preemption);
  EXPECT_FALSE(a.hold);
  ASSERT_TRUE(a.keep);
  EXPECT_TRUE(a.keep->settled);
  // A second before the grace end it is the job's own requeue, as before.
  EXPECT_EQ(watch(requeued_by_slurm(&p, at + 29), &r, at + 31, kLife).settle,
            Settle::RequeuedDuringGrace);
}

TEST(WatchKilledBySlurm, AfterTheRequeuesEpilogTheToldEndDecides) {
  const auto p = promise(30);
  const int64_t at = kStart + 100;
  WatchedJob j = requeued_by_slurm(&p, 0);
  j.completing = false;  // batch_requeue_fini cleared the run's start and end
  j.start = 0;
  const RunRecord r = triggered_record(at, at + 30);
  EXPECT_EQ(watch(j, &r, at + 40, kLife).settle, Settle::RequeuedDuringGrace);  // not told
  j.told_grace_end = at + 30;
  j.told_end = at + 31;
  const WatchAction a = watch(j, &r, at + 40, kLife);
  EXPECT_EQ(a.settle, Settle::KilledAtGraceEnd);
  EXPECT_EQ(a.killed_at, at + 31);
  EXPECT_FALSE(a.account_run);  // the job's record is the next run's already
  EXPECT_FALSE(a.kill_leftovers);
}

TEST(WatchKilledBySlurm, TheToldGraceEndDecidesAsItDoesTheRefund) {
  // preempt/quota's grace end (what priority/fairshare refunds by) may be a second before the
  // watcher's (two reads of the clock), or the time limit's end.
  const auto p = promise(30);
  const int64_t at = kStart + 100;
  WatchedJob j = requeued_by_slurm(&p, at + 30);
  const RunRecord r = triggered_record(at, at + 31);
  EXPECT_EQ(watch(j, &r, at + 32, kLife).settle, Settle::RequeuedDuringGrace);
  j.told_grace_end = at + 30;
  EXPECT_EQ(watch(j, &r, at + 32, kLife).settle, Settle::KilledAtGraceEnd);
}

TEST(WatchKilledBySlurm, AGraceTheWatcherNeverSawTakesTheToldGraceAndPreemption) {
  const auto p = promise(30);
  const int64_t at = kStart + 100;
  WatchedJob j = requeued_by_slurm(&p, at + 30);
  RunRecord r;  // seen running, never preempted
  r.start = kStart;
  EXPECT_EQ(watch(j, &r, at + 31, kLife).settle, Settle::RequeuedDuringGrace);  // not told
  j.told_preempt = at;
  j.told_grace_end = at + 30;
  const WatchAction a = watch(j, &r, at + 31, kLife);
  EXPECT_EQ(a.settle, Settle::KilledAtGraceEnd);
  EXPECT_TRUE(a.find_preemptor);
  EXPECT_EQ(a.preempted_at, at);
  EXPECT_EQ(a.killed_at, at + 30);
}

TEST(WatchKilledBySlurm, ACancelAtTheGraceEndIsTheKill) {
  const auto p = promise(30, /*requeue=*/false);
  const int64_t at = kStart + 100;
  WatchedJob j = preempted(&p, at, 30);
  j.state = WatchedJob::State::Other;  // cancelled by Slurm's grace check
  j.completing = true;
  const RunRecord r = triggered_record(at, at + 30);
  const WatchAction a = watch(j, &r, at + 32, kLife);
  EXPECT_EQ(a.settle, Settle::KilledAtGraceEnd);
  EXPECT_FALSE(a.requeued);
  EXPECT_EQ(a.restart, 0u);
  EXPECT_TRUE(a.account_run);
  EXPECT_EQ(a.killed_at, at + 30);
  j.end = at + 10;  // cancelled in its grace (scancel): nothing to settle, as before
  EXPECT_EQ(watch(j, &r, at + 32, kLife).settle, Settle::None);
}

TEST(WatchKilledBySlurm, APausedRunIsNeverTakenForAKill) {
  const auto p = promise(30);
  const int64_t at = kStart + 100;
  WatchedJob j = requeued_by_slurm(&p, at + 30);
  j.paused = true;
  RunRecord r = triggered_record(at, at + 30);
  r.paused = true;
  const WatchAction a = watch(j, &r, at + 31, kLife);
  EXPECT_EQ(a.settle, Settle::RequeuedDuringGrace);
  EXPECT_TRUE(a.hold);
}

TEST(Watch, ASelfRequeueBeforeTheGraceWasSeenLooksForThePreemptor) {
  const auto p = promise(30);
  WatchedJob j = running(&p);
  j.state = WatchedJob::State::Pending;
  j.restarts = 1;
  j.completing = true;
  RunRecord r;  // seen running, never preempted
  r.start = kStart;
  const WatchAction a = watch(j, &r, kStart + 200, kLife);
  EXPECT_EQ(a.settle, Settle::RequeuedDuringGrace);
  EXPECT_TRUE(a.find_preemptor);
  EXPECT_EQ(a.drain_until, kStart + 230);
  j.completing = false;
  EXPECT_EQ(watch(j, &r, kStart + 200, kLife).drain_until, 0);
}

TEST(Watch, AnExitNeverPreemptedIsNotSettled) {
  const auto p = promise();
  WatchedJob j = running(&p);
  j.state = WatchedJob::State::Exited;
  RunRecord r;
  r.start = kStart;
  const WatchAction a = watch(j, &r, kStart + 200, kLife);
  EXPECT_EQ(a.settle, Settle::None);
  EXPECT_FALSE(a.changes_job());
}

TEST(Watch, ExitBeforeTheGraceWasSeenIsNotedAndRequeued) {
  const auto p = promise();
  WatchedJob j = preempted(&p, kStart + 100, 60);
  j.state = WatchedJob::State::Exited;
  RunRecord r;
  r.start = kStart;
  const WatchAction a = watch(j, &r, kStart + 101, kLife);
  EXPECT_TRUE(a.note_unseen_preemption);
  EXPECT_EQ(a.settle, Settle::RequeueExited);
}

// --- preemptions at once (grace 0): Slurm requeues or cancels the job in the call that
// preempts it; the watcher is told by the grace-start event and never sees a grace.

WatchEvent grace_start_event(int64_t at, int64_t grace, uint32_t restarts = 0) {
  WatchEvent e = event(WatchEvent::Kind::GraceStart, 7, at, grace);
  e.preemptor = 9;
  e.start = kStart;
  e.restarts = restarts;
  return e;
}

// The job as the watcher sees it after Slurm's requeue at once: pending, a restart more, its
// processes still being killed, preempt_time still set (cleared when the epilog completes).
WatchedJob requeued_at_once(const JobCheckpoint* p, int64_t at) {
  WatchedJob j = preempted(p, at, 0);
  j.state = WatchedJob::State::Pending;
  j.restarts = 1;
  j.completing = true;
  return j;
}

TEST(WatchAtOnce, AGraceStartEventWithGrace0TellsAPreemptionAtOnce) {
  const int64_t at = kStart + 100;
  const RunRecord r = told_by(grace_start_event(at, 0, 2));
  EXPECT_TRUE(r.at_once);
  EXPECT_EQ(r.preempt, at);
  EXPECT_EQ(r.start, kStart);
  EXPECT_EQ(r.restart, 2u);
  EXPECT_FALSE(r.triggered || r.settled);
  EXPECT_FALSE(told_by(grace_start_event(at, 30)).at_once);
  EXPECT_FALSE(told_by(grace_start_event(at, -1)).at_once);  // not said
  WatchEvent pause = grace_start_event(at, 0);
  pause.kind = WatchEvent::Kind::Pause;
  EXPECT_FALSE(told_by(pause).at_once);
  EXPECT_EQ(told_by(pause).preempt, 0);
}

TEST(WatchAtOnce, AnUnmanagedJobRequeuedAtOnceIsNotedPreemptedAndKilledOnce) {
  const int64_t at = kStart + 100;
  const RunRecord told = told_by(grace_start_event(at, 0));
  const WatchAction a = watch(requeued_at_once(nullptr, at), &told, at + 1, kLife);
  EXPECT_EQ(a.settle, Settle::PreemptedAtOnce);
  EXPECT_EQ(a.preempted_at, at);
  EXPECT_TRUE(a.requeued);
  EXPECT_EQ(a.restart, 1u);
  EXPECT_FALSE(a.note_unseen_preemption);
  EXPECT_FALSE(a.find_preemptor);
  EXPECT_FALSE(a.kill);
  EXPECT_TRUE(a.account_run);  // still completing: the preempted run's record is the job's
  EXPECT_TRUE(a.changes_job());
  ASSERT_TRUE(a.keep);
  EXPECT_TRUE(a.keep->settled);
  EXPECT_FALSE(a.keep->at_once);
  EXPECT_TRUE(worth_keeping(*a.keep));
  // The next visits (its requeue hold, the run-end event): the tombstone, nothing noted again.
  const WatchAction again = watch(requeued_at_once(nullptr, at), &*a.keep, at + 2, kLife);
  EXPECT_EQ(again.settle, Settle::None);
  EXPECT_FALSE(again.changes_job());
  ASSERT_TRUE(again.keep);
  EXPECT_EQ(*again.keep, *a.keep);
}

TEST(WatchAtOnce, AManagedJobRequeuedAtOnceDidNotRequeueItself) {
  const auto p = promise(0);
  const int64_t at = kStart + 100;
  const RunRecord told = told_by(grace_start_event(at, 0));
  const WatchAction a = watch(requeued_at_once(&p, at), &told, at + 1, kLife);
  EXPECT_EQ(a.settle, Settle::PreemptedAtOnce);  // not RequeuedDuringGrace
  EXPECT_FALSE(a.note_unseen_preemption);
  EXPECT_FALSE(a.find_preemptor);
  EXPECT_EQ(a.drain_until, 0);
  EXPECT_TRUE(a.requeued);
  EXPECT_EQ(a.restart, 1u);
}

TEST(WatchAtOnce, ARequeueSeenAfterItsEpilogTakesTheEventsTime) {
  const int64_t at = kStart + 100;
  WatchedJob j = requeued_at_once(nullptr, at);
  j.preempt = 0;  // Slurm cleared it (batch_requeue_fini), and the run's start
  j.start = 0;
  j.completing = false;
  const RunRecord told = told_by(grace_start_event(at, 0));
  const WatchAction a = watch(j, &told, at + 3, kLife);
  EXPECT_EQ(a.settle, Settle::PreemptedAtOnce);
  EXPECT_EQ(a.preempted_at, at);
  EXPECT_TRUE(a.requeued);
  EXPECT_FALSE(a.account_run);  // the job's record is the next run's already
}

TEST(WatchAtOnce, AJobThatMayNotRequeueIsCancelledAtOnce) {
  const int64_t at = kStart + 100;
  WatchedJob j = preempted(nullptr, at, 0);
  j.state = WatchedJob::State::Other;  // PREEMPTED (cancelled), completing
  j.completing = true;
  const RunRecord told = told_by(grace_start_event(at, 0));
  const WatchAction a = watch(j, &told, at + 1, kLife);
  EXPECT_EQ(a.settle, Settle::PreemptedAtOnce);
  EXPECT_FALSE(a.requeued);
  EXPECT_EQ(a.preempted_at, at);
  EXPECT_TRUE(a.account_run);
  ASSERT_TRUE(a.keep);
  EXPECT_TRUE(a.keep->settled);
}

TEST(WatchAtOnce, NothingIsSettledWhileTheRunHasNotEnded) {
  const int64_t at = kStart + 100;
  const RunRecord told = told_by(grace_start_event(at, 0));
  // Pending with no restart more: not the preempted run's end.
  WatchedJob pending = running(nullptr);
  pending.state = WatchedJob::State::Pending;
  EXPECT_EQ(watch(pending, &told, at + 1, kLife).settle, Settle::None);
  // Ended, but another run than the one preempted.
  WatchedJob other = preempted(nullptr, at, 0);
  other.state = WatchedJob::State::Other;
  other.start = kStart + 50;
  EXPECT_EQ(watch(other, &told, at + 1, kLife).settle, Settle::None);
  // Still running (Slurm could neither requeue nor kill it): the grace path kills it now.
  const WatchAction a = watch(preempted(nullptr, at, 0), &told, at + 1, kLife);
  EXPECT_EQ(a.settle, Settle::None);
  EXPECT_TRUE(a.kill);
  EXPECT_FALSE(a.note_killed);  // unmanaged: no note on this path
}

TEST(WatchAtOnce, ASelfRequeueInAGraceIsStillTheJobsOwn) {
  const auto p = promise(30);
  const int64_t at = kStart + 100;
  const RunRecord told = told_by(grace_start_event(at, 30));
  const WatchAction a = watch(requeued_at_once(&p, at), &told, at + 1, kLife);
  EXPECT_EQ(a.settle, Settle::RequeuedDuringGrace);
  EXPECT_TRUE(a.find_preemptor);
}

TEST(WatchAtOnce, AnUnmanagedRunningJobDropsTheTombstoneOfItsEarlierRun) {
  RunRecord tomb = told_by(grace_start_event(kStart - 500, 0));
  tomb.start = kStart - 600;
  tomb.settled = true;
  const WatchAction a = watch(running(nullptr), &tomb, kStart + 5, kLife);
  EXPECT_FALSE(a.keep);
  EXPECT_FALSE(a.changes_job());
}

TEST(WatchAtOnce, TheToldRunWinsOverAKeptRecordOfAnEarlierRun) {
  const int64_t at = kStart + 100;
  const RunRecord told = told_by(grace_start_event(at, 0, 1));
  RunRecord tomb;  // the first run's, settled
  tomb.start = kStart - 600;
  tomb.settled = true;
  EXPECT_EQ(told_run(&tomb, &told), told);
  EXPECT_EQ(told_run(nullptr, &told), told);
  EXPECT_EQ(told_run(&tomb, nullptr), tomb);
  EXPECT_FALSE(told_run(nullptr, nullptr));
  // An event of an earlier run than the kept record's tells nothing.
  RunRecord later;
  later.start = kStart + 900;
  later.restart = 2;
  EXPECT_EQ(told_run(&later, &told), later);
}

TEST(WatchAtOnce, AKeptRecordOfTheSameRunLearnsOfThePreemptionAtOnce) {
  const int64_t at = kStart + 100;
  const RunRecord told = told_by(grace_start_event(at, 0));
  RunRecord seen;  // the run's record (its time-limit signal was sent)
  seen.start = kStart;
  seen.time_limit_triggered = true;
  const auto r = told_run(&seen, &told);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->at_once);
  EXPECT_EQ(r->preempt, at);
  EXPECT_TRUE(r->time_limit_triggered);
  // A run whose grace the watcher saw, or one settled already, is not preempted at once.
  const RunRecord triggered = triggered_record(at, at + 30);
  EXPECT_EQ(told_run(&triggered, &told), triggered);
  RunRecord tomb = seen;
  tomb.settled = true;
  EXPECT_EQ(told_run(&tomb, &told), tomb);
}

TEST(WatchAtOnce, TheNoteSaysTheSignalTheJobGotAndGrace0) {
  const JobCheckpoint plain = at_once_terms(nullptr);
  EXPECT_EQ(plain.signal, SIGTERM);
  EXPECT_EQ(plain.grace_s, 0);
  const auto p = promise(30);
  const JobCheckpoint managed = at_once_terms(&p);
  EXPECT_EQ(managed.signal, p.signal);
  EXPECT_EQ(managed.grace_s, 0);
}

TEST(Watch, TheTimeLimitSignalComesOnceAtTheLead) {
  const auto p = promise(60);
  WatchedJob j = running(&p);
  EXPECT_FALSE(watch(j, nullptr, kLimit - 61, kLife).time_limit_signal);
  const WatchAction a = watch(j, nullptr, kLimit - 60, kLife);
  EXPECT_TRUE(a.time_limit_signal);
  EXPECT_FALSE(watch(j, &*a.keep, kLimit - 30, kLife).time_limit_signal);
  j.time_limited = false;
  EXPECT_FALSE(watch(j, nullptr, kLimit - 30, kLife).time_limit_signal);
}

// An administrator raises the limit after the trigger (the job saved and went on): the new end
// gets its own trigger at its lead, once; a lowered limit, or one raised back to a limit
// already signalled, none.
TEST(Watch, ATimeLimitRaisedAfterItsTriggerGetsAnotherAtTheNewLead) {
  const auto p = promise(60);
  WatchedJob j = running(&p);
  j.time_limit = 60;
  const WatchAction first = watch(j, nullptr, kLimit - 60, kLife);
  ASSERT_TRUE(first.time_limit_signal);
  ASSERT_TRUE(first.keep);
  EXPECT_EQ(first.keep->time_limit_for, 60U);
  EXPECT_FALSE(time_limit_timer_wanted(&*first.keep, 60));
  j.time_limit = 61;  // +1 min
  j.end = kLimit + 60;
  EXPECT_TRUE(time_limit_timer_wanted(&*first.keep, 61));
  const WatchAction early = watch(j, &*first.keep, kLimit - 30, kLife);
  EXPECT_FALSE(early.time_limit_signal);
  ASSERT_TRUE(early.keep);
  const WatchAction second = watch(j, &*early.keep, kLimit, kLife);
  EXPECT_TRUE(second.time_limit_signal);
  ASSERT_TRUE(second.keep);
  EXPECT_EQ(second.keep->time_limit_for, 61U);
  EXPECT_FALSE(watch(j, &*second.keep, kLimit + 30, kLife).time_limit_signal);
  EXPECT_FALSE(time_limit_timer_wanted(&*second.keep, 61));
  // Lowered to 59, then back to 60: already signalled for more, nothing new.
  for (const uint32_t limit : {59U, 60U, 61U}) {
    j.time_limit = limit;
    j.end = kStart + int64_t{limit} * 60;
    EXPECT_FALSE(watch(j, &*second.keep, j.end - 10, kLife).time_limit_signal) << limit;
  }
  // Raised past 61 within the lead already: at once.
  j.time_limit = 62;
  j.end = kStart + 62 * 60;
  EXPECT_TRUE(watch(j, &*second.keep, j.end - 10, kLife).time_limit_signal);
  // A preempted run gets no time-limit trigger, raised limit or not.
  WatchedJob pre = preempted(&p, kLimit, 30);
  pre.time_limit = 62;
  EXPECT_FALSE(watch(pre, &*second.keep, kLimit + 5, kLife).time_limit_signal);
}

// A record read from a version 2 file says the trigger was sent, not for which limit: the visit
// takes the job's limit then for it, and sends nothing.
TEST(Watch, ATimeLimitTriggerFromAnOlderStateFileTakesTheLimitItFinds) {
  const auto p = promise(60);
  WatchedJob j = running(&p);
  j.time_limit = 60;
  const RunRecord old{.start = kStart, .time_limit_triggered = true};
  const WatchAction a = watch(j, &old, kLimit - 30, kLife);
  EXPECT_FALSE(a.time_limit_signal);
  ASSERT_TRUE(a.keep);
  EXPECT_EQ(a.keep->time_limit_for, 60U);
  EXPECT_TRUE(time_limit_timer_wanted(nullptr, 60));
  EXPECT_TRUE(time_limit_timer_wanted(&old, 60));  // the visit takes it first
}

// Suspended (scontrol suspend, the gang scheduler): the run goes on once resumed, with its
// record as it was; Slurm moves its end by the time suspended, the limit stays: no second
// trigger. The scan keeps such a record without a visit.
TEST(Watch, ASuspendedRunKeepsItsTimeLimitRecord) {
  const auto p = promise(60);
  WatchedJob j = running(&p);
  j.time_limit = 60;
  const WatchAction first = watch(j, nullptr, kLimit - 60, kLife);
  ASSERT_TRUE(first.keep);
  WatchedJob suspended = j;
  suspended.state = WatchedJob::State::Other;
  suspended.suspended = true;
  const WatchAction during = watch(suspended, &*first.keep, kLimit - 50, kLife);
  ASSERT_TRUE(during.keep);
  EXPECT_EQ(*during.keep, *first.keep);
  EXPECT_FALSE(during.changes_job());
  ScanFacts f;
  f.managed = true;
  f.state = WatchedJob::State::Other;
  f.suspended = true;
  f.start = kStart;
  f.time_limited = true;
  EXPECT_EQ(kept_fate(*first.keep, &f), KeptFate::Keep);
  f.start = kStart + 1;  // not this run's (never for a suspended job, but not kept blindly)
  EXPECT_EQ(kept_fate(*first.keep, &f), KeptFate::Visit);
  WatchedJob resumed = j;
  resumed.end = kLimit + 600;
  EXPECT_FALSE(watch(resumed, &*during.keep, kLimit + 590, kLife).time_limit_signal);
  // A record of a run in a grace is not kept by suspension (the grace settles it as before).
  const RunRecord grace = triggered_record(kLimit - 100, kLimit - 90);
  EXPECT_FALSE(watch(suspended, &grace, kLimit - 95, kLife).keep ==
               std::optional<RunRecord>(grace));
}

TEST(Watch, ANewRunForgetsTheLastOne) {
  const auto p = promise();
  RunRecord old = triggered_record(kStart - 500, kStart - 440);
  old.start = kStart - 600;
  old.time_limit_triggered = true;
  old.time_limit_for = 60;
  const WatchAction a = watch(running(&p), &old, kStart + 1, kLife);
  ASSERT_TRUE(a.keep);
  EXPECT_EQ(*a.keep, RunRecord{.start = kStart});
}

TEST(Watch, ARequeueHoldIsReleasedOnceTheNodesAreFree) {
  WatchedJob j = running(nullptr);
  j.state = WatchedJob::State::Pending;
  j.restarts = 1;
  j.submit = kStart + 200;  // the requeue
  j.begin = kStart + 200 + kLife + 1;
  j.completing = true;
  EXPECT_FALSE(watch(j, nullptr, kStart + 205, kLife).release_hold);
  j.completing = false;
  EXPECT_TRUE(watch(j, nullptr, kStart + 205, kLife).release_hold);
  j.restarts = 0;  // never requeued: a --begin
  EXPECT_FALSE(watch(j, nullptr, kStart + 205, kLife).release_hold);
}

// Each ask for a scheduler pass is a whole pass of Slurm's main scheduler: only an action that
// makes a pending job eligible asks; what frees nodes leaves it to Slurm's epilog-complete RPC.
TEST(Watch, OnlyReleasingARequeueHoldAsksForASchedulerPass) {
  const auto p = promise(20);
  const int64_t at = kStart + 100;
  const WatchAction grace_start = watch(preempted(&p, at, 60), nullptr, at + 1, kLife);
  ASSERT_TRUE(grace_start.trigger);
  EXPECT_TRUE(grace_start.changes_job());
  EXPECT_FALSE(grace_start.may_start_a_job());

  const RunRecord r = triggered_record(at, at + 20);
  const WatchAction kill = watch(preempted(&p, at, 20), &r, at + 20, kLife);
  ASSERT_TRUE(kill.kill);
  EXPECT_FALSE(kill.may_start_a_job());

  WatchedJob exited = preempted(&p, at, 60);
  exited.state = WatchedJob::State::Exited;
  const RunRecord r60 = triggered_record(at, at + 60);
  const WatchAction requeue = watch(exited, &r60, at + 10, kLife);
  ASSERT_EQ(requeue.settle, Settle::RequeueExited);
  EXPECT_FALSE(requeue.may_start_a_job());

  WatchedJob held = running(nullptr);
  held.state = WatchedJob::State::Pending;
  held.restarts = 1;
  held.submit = kStart + 200;
  held.begin = kStart + 200 + kLife + 1;
  held.completing = true;
  const WatchAction still_completing = watch(held, nullptr, kStart + 205, kLife);
  ASSERT_FALSE(still_completing.release_hold);
  EXPECT_FALSE(still_completing.may_start_a_job());
  held.completing = false;
  const WatchAction release = watch(held, nullptr, kStart + 205, kLife);
  ASSERT_TRUE(release.release_hold);
  EXPECT_TRUE(release.may_start_a_job());
}

// --- restart recovery -------------------------------------------------------------------

TEST(WatchRestart, APreemptionSlurmForgotIsRestoredWithItsGraceEnd) {
  // The watcher triggered at `at`; slurmctld died before saving preempt_time; after the
  // restart the job runs with no preempt time and its time-limit end.
  const auto p = promise(10);
  const int64_t at = kStart + 100;
  const RunRecord r = triggered_record(at, at + 10);
  const WatchAction a = watch(running(&p), &r, at + 3, kLife);
  EXPECT_EQ(a.restore_preempt, at);
  EXPECT_EQ(a.set_end, at + 10);
  EXPECT_FALSE(a.trigger);  // the steps had their signal: not twice
  EXPECT_FALSE(a.kill);
  // And at the grace end it is killed on time.
  const WatchAction b = watch(running(&p), &r, at + 10, kLife);
  EXPECT_TRUE(b.kill);
}

TEST(WatchRestart, AHeterogeneousComponentsForgottenPreemptionIsLeftToSlurm) {
  // Slurm ends a het job's grace for all its components at once: a preempt time restored on one
  // component alone would have Slurm start the others' graces with no preemptor (a crash).
  const auto p = promise(10);
  const int64_t at = kStart + 100;
  const RunRecord r = triggered_record(at, at + 10);
  WatchedJob component = running(&p);
  component.het = true;
  const WatchAction a = watch(component, &r, at + 3, kLife);
  EXPECT_EQ(a.restore_preempt, 0);
  EXPECT_EQ(a.set_end, 0);
  EXPECT_FALSE(a.kill);
  EXPECT_FALSE(watch(component, &r, at + 10, kLife).kill);
}

TEST(WatchRestart, ASecondPreemptionByARestartedSlurmKeepsTheFirstGraceEnd) {
  const auto p = promise(10);
  const int64_t at = kStart + 100;
  const RunRecord r = triggered_record(at, at + 10);
  // Slurm forgot the first preemption and began a new one at at + 8, grace 10.
  const WatchAction a = watch(preempted(&p, at + 8, 10), &r, at + 9, kLife);
  EXPECT_FALSE(a.trigger);
  EXPECT_EQ(a.set_end, at + 10);
  EXPECT_TRUE(watch(preempted(&p, at + 8, 10), &r, at + 10, kLife).kill);
}

TEST(WatchRestart, AnExitDuringTheDowntimeIsRequeued) {
  const auto p = promise(10);
  const int64_t at = kStart + 100;
  const RunRecord r = triggered_record(at, at + 10);
  WatchedJob j = running(&p);  // Slurm forgot the preemption, then the job exited
  j.state = WatchedJob::State::Exited;
  EXPECT_EQ(watch(j, &r, at + 4, kLife).settle, Settle::RequeueExited);
}

TEST(WatchRestart, AJobSlurmRemembersPreemptedGetsARebuiltRecord) {
  const auto p = promise(10);
  WatchedJob j = preempted(&p, kStart + 100, 10);
  const auto r = record_after_restart(j);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->triggered);
  EXPECT_EQ(r->grace_end, kStart + 110);
  // Running: the steps get their trigger (they may never have had it).
  EXPECT_TRUE(watch(j, &*r, kStart + 103, kLife).trigger);
  // Exited during the downtime: noted and requeued.
  j.state = WatchedJob::State::Exited;
  const WatchAction a = watch(j, &*r, kStart + 103, kLife);
  EXPECT_TRUE(a.note_unseen_preemption);
  EXPECT_EQ(a.settle, Settle::RequeueExited);
}

TEST(WatchRestart, NothingIsRebuiltForJobsNotBeingPreempted) {
  const auto p = promise();
  EXPECT_FALSE(record_after_restart(running(&p)));
  EXPECT_FALSE(record_after_restart(preempted(nullptr, kStart + 1, 10)));
  WatchedJob pending = preempted(&p, kStart + 1, 10);
  pending.state = WatchedJob::State::Pending;
  EXPECT_FALSE(record_after_restart(pending));
}

// --- what the watcher follows every tick, and what its scan of the job list picks --------------

TEST(NeedsWatching, AGraceUnderWayAnUnsettledRunOrARequeueHold) {
  const auto p = promise();
  const int64_t at = kStart + 100;
  EXPECT_FALSE(needs_watching(running(&p), nullptr, at, kLife));  // a plain run: the scan
  EXPECT_TRUE(needs_watching(preempted(&p, at, 60), nullptr, at, kLife));
  WatchedJob other = preempted(nullptr, at, 60);  // any job's grace: its end is enforced
  EXPECT_TRUE(needs_watching(other, nullptr, at, kLife));
  RunRecord seen = triggered_record(at, at + 60);
  WatchedJob exited = running(&p);
  exited.state = WatchedJob::State::Exited;  // not settled yet: the next tick requeues it
  EXPECT_TRUE(needs_watching(exited, &seen, at + 5, kLife));
  seen.settled = true;
  EXPECT_FALSE(needs_watching(exited, &seen, at + 5, kLife));
  WatchedJob held = running(&p);  // requeued at `at`: Slurm holds it until at + kLife + 1
  held.state = WatchedJob::State::Pending;
  held.restarts = 1;
  held.has_details = true;
  held.submit = at;
  held.begin = at + kLife + 1;
  EXPECT_TRUE(needs_watching(held, nullptr, at + 1, kLife));
  held.begin = at + 1;  // released
  EXPECT_FALSE(needs_watching(held, nullptr, at + 1, kLife));
  held.begin = at + 86400;  // a --begin of the user's is not Slurm's hold
  EXPECT_FALSE(needs_watching(held, nullptr, at + 1, kLife));
}

TEST(NeedsWatching, ARequeuedJobStillCompletingUntilSlurmSetsItsHold) {
  // Killed at its grace end and requeued: Slurm sets the hold when the epilog completes, and
  // nothing tells the watcher then; it looks every tick until then.
  const auto p = promise();
  const int64_t at = kStart + 100;
  WatchedJob requeued = running(&p);
  requeued.state = WatchedJob::State::Pending;
  requeued.restarts = 1;
  requeued.has_details = true;
  requeued.submit = at;
  requeued.completing = true;
  EXPECT_TRUE(needs_watching(requeued, nullptr, at + 1, kLife));
  requeued.restarts = 0;  // a job that never ran: not a requeue
  EXPECT_FALSE(needs_watching(requeued, nullptr, at + 1, kLife));
  requeued.restarts = 1;
  requeued.completing = false;  // done, no hold set (a user's release): nothing to wait for
  EXPECT_FALSE(needs_watching(requeued, nullptr, at + 1, kLife));
  EXPECT_TRUE(awaits_requeue_hold(WatchedJob::State::Pending, 2, true, true));
  EXPECT_FALSE(awaits_requeue_hold(WatchedJob::State::Running, 2, true, true));
  EXPECT_FALSE(awaits_requeue_hold(WatchedJob::State::Pending, 2, false, true));
}

TEST(ScanVerdict, VisitsGracesAndHoldsArmsTimersAndSkipsTheRest) {
  const int64_t now = kStart + 100;
  ScanFacts f;
  f.state = WatchedJob::State::Pending;
  EXPECT_EQ(scan_verdict(f, 0, now, kLife, false), ScanVerdict::Skip);
  f.state = WatchedJob::State::Running;
  f.preempt = now - 1;
  EXPECT_EQ(scan_verdict(f, 0, now, kLife, false), ScanVerdict::Visit);
  f.preempt = 0;
  f.managed = true;
  f.time_limited = true;
  f.start = kStart;
  EXPECT_EQ(scan_verdict(f, 0, now, kLife, false), ScanVerdict::ArmTimer);
  EXPECT_EQ(scan_verdict(f, kStart, now, kLife, false), ScanVerdict::Skip);  // armed already
  EXPECT_EQ(scan_verdict(f, kStart - 50, now, kLife, false), ScanVerdict::ArmTimer);  // new run
  f.time_limited = false;
  EXPECT_EQ(scan_verdict(f, 0, now, kLife, false), ScanVerdict::Skip);
  f.state = WatchedJob::State::Pending;
  f.restarts = 1;
  f.has_details = true;
  f.submit = now - 5;
  f.begin = now - 5 + kLife + 1;
  EXPECT_EQ(scan_verdict(f, 0, now, kLife, false), ScanVerdict::Visit);
  f.begin = 0;  // requeued, its epilog still running: the hold comes when it ends
  f.completing = true;
  EXPECT_EQ(scan_verdict(f, 0, now, kLife, false), ScanVerdict::Visit);
  f.completing = false;
  EXPECT_EQ(scan_verdict(f, 0, now, kLife, false), ScanVerdict::Skip);
  // After a restart: a managed job Slurm remembers preempted, whatever its state.
  ScanFacts ended;
  ended.managed = true;
  ended.preempt = now - 3;
  EXPECT_EQ(scan_verdict(ended, 0, now, kLife, false), ScanVerdict::Skip);
  EXPECT_EQ(scan_verdict(ended, 0, now, kLife, true), ScanVerdict::Visit);
  ended.managed = false;
  EXPECT_EQ(scan_verdict(ended, 0, now, kLife, true), ScanVerdict::Skip);
}

// The facts the scan reads of a job that is still in Slurm: its state, run start, preemption.
ScanFacts facts(WatchedJob::State state, int64_t start, int64_t preempt) {
  ScanFacts f;
  f.state = state;
  f.start = start;
  f.preempt = preempt;
  return f;
}

TEST(KeptFate, TheScanDropsAndKeepsRecordsWithoutAVisitWhereAVisitWouldChangeNothing) {
  using S = WatchedJob::State;
  const int64_t now = kStart + 100;
  RunRecord tomb;  // a settled preemption of the run that started at kStart
  tomb.start = kStart;
  tomb.triggered = true;
  tomb.settled = true;
  tomb.preempt = now - 20;
  tomb.grace_end = now - 15;
  const auto fate = [](const RunRecord& r, const ScanFacts& f) { return kept_fate(r, &f); };
  // Slurm no longer has the job: forgotten, whatever the record.
  EXPECT_EQ(kept_fate(tomb, nullptr), KeptFate::Forget);
  // Pending again (requeued) or ended and still kept by Slurm: the tombstone stays, unvisited.
  EXPECT_EQ(fate(tomb, facts(S::Pending, kStart, 0)), KeptFate::Keep);
  EXPECT_EQ(fate(tomb, facts(S::Other, kStart, 0)), KeptFate::Keep);
  // Running again: a record of an earlier run, forgotten (a grace of the new run is the scan
  // verdict's to visit), preempted or not.
  EXPECT_EQ(fate(tomb, facts(S::Running, now - 5, 0)), KeptFate::Forget);
  EXPECT_EQ(fate(tomb, facts(S::Running, now - 5, now - 1)), KeptFate::Forget);
  // Settled and still running the same run (a requeue Slurm refused): visited.
  EXPECT_EQ(fate(tomb, facts(S::Running, kStart, now - 20)), KeptFate::Visit);
  EXPECT_EQ(fate(tomb, facts(S::Running, kStart, 0)), KeptFate::Visit);

  RunRecord grace = tomb;  // a grace under way: visited, whatever the job looks like
  grace.settled = false;
  EXPECT_EQ(fate(grace, facts(S::Running, kStart, now - 20)), KeptFate::Visit);
  EXPECT_EQ(fate(grace, facts(S::Pending, kStart, 0)), KeptFate::Visit);
  EXPECT_EQ(kept_fate(grace, nullptr), KeptFate::Forget);

  RunRecord limit;  // the time-limit signal sent to the run that started at kStart
  limit.start = kStart;
  limit.time_limit_triggered = true;
  EXPECT_EQ(fate(limit, facts(S::Running, kStart, 0)), KeptFate::Keep);
  EXPECT_EQ(fate(limit, facts(S::Running, kStart, now - 1)), KeptFate::Visit);  // preempted now
  EXPECT_EQ(fate(limit, facts(S::Running, now - 5, 0)), KeptFate::Forget);      // a new run
  // The run ended: a visit settles the record or drops it.
  EXPECT_EQ(fate(limit, facts(S::Pending, kStart, 0)), KeptFate::Visit);
}

// What kept_fate leaves unvisited, a visit would not have changed: watch() keeps the same record
// and acts on nothing.
TEST(KeptFate, KeepIsWhatAVisitWouldDo) {
  const auto p = promise();
  const int64_t now = kStart + 100;
  RunRecord tomb = triggered_record(now - 20, now - 15);
  tomb.settled = true;
  WatchedJob pending = running(&p);  // requeued at its grace end, out of the requeue hold
  pending.state = WatchedJob::State::Pending;
  pending.restarts = 1;
  pending.preempt = 0;
  pending.submit = now - 15;
  pending.begin = 0;  // a job in the hold is the scan verdict's to visit
  const ScanFacts pending_facts = facts(pending.state, pending.start, pending.preempt);
  ASSERT_EQ(kept_fate(tomb, &pending_facts), KeptFate::Keep);
  WatchAction a = watch(pending, &tomb, now, kLife);
  EXPECT_FALSE(a.changes_job());
  EXPECT_FALSE(a.time_limit_signal);
  ASSERT_TRUE(a.keep);
  EXPECT_EQ(*a.keep, tomb);

  RunRecord limit;  // the time-limit signal sent to this run
  limit.start = kStart;
  limit.time_limit_triggered = true;
  limit.time_limit_for = 60;
  const WatchedJob near_end = running(&p);
  const ScanFacts near_end_facts = facts(near_end.state, near_end.start, near_end.preempt);
  ASSERT_EQ(kept_fate(limit, &near_end_facts), KeptFate::Keep);
  a = watch(near_end, &limit, kLimit - 10, kLife);
  EXPECT_FALSE(a.changes_job());
  EXPECT_FALSE(a.time_limit_signal);
  ASSERT_TRUE(a.keep);
  EXPECT_EQ(*a.keep, limit);
}

TEST(Drain, KillsAtTheGraceEndOnlyWhileTheJobIsStillCompleting) {
  EXPECT_EQ(drain_step(true, true, 100, 99), DrainStep::Wait);
  EXPECT_EQ(drain_step(true, true, 100, 100), DrainStep::Kill);
  EXPECT_EQ(drain_step(true, false, 100, 100), DrainStep::Forget);
  EXPECT_EQ(drain_step(false, true, 100, 100), DrainStep::Forget);
}

TEST(ControlStep, ActsInItsControlPeriodWaitsThroughAHandOverAndForgetsAnotherPeriodsRecords) {
  // Before the first takeover (a primary starting, a backup in standby): nothing.
  EXPECT_EQ(control_step(0, false, 0, false), ControlStep::Wait);
  // In control, not yet holding records (the first tick reads the file), or holding this
  // period's.
  EXPECT_EQ(control_step(100, true, 0, false), ControlStep::Act);
  EXPECT_EQ(control_step(100, true, 100, false), ControlStep::Act);
  // A shutdown or a hand-over under way (the period not yet over): no action, records kept.
  EXPECT_EQ(control_step(100, false, 100, false), ControlStep::Wait);
  EXPECT_EQ(control_step(100, false, 100, true), ControlStep::Wait);
  EXPECT_EQ(control_step(100, false, 0, false), ControlStep::Wait);
  // Seen ending, the period acts no more: not in the instant slurmctld, back to standby, has
  // cleared the shutdown time and resume_backup but not yet the period.
  EXPECT_EQ(control_step(100, true, 100, true), ControlStep::Wait);
  // Back in standby with the period's records: forget them.
  EXPECT_EQ(control_step(0, false, 100, false), ControlStep::Forget);
  EXPECT_EQ(control_step(0, false, 100, true), ControlStep::Forget);
  // A new takeover the watcher slept through its standby for: the records are another
  // period's, forgotten before anything is acted on.
  EXPECT_EQ(control_step(200, true, 100, false), ControlStep::Forget);
  EXPECT_EQ(control_step(200, true, 100, true), ControlStep::Forget);
  EXPECT_EQ(control_step(200, false, 100, false), ControlStep::Forget);
}

// --- the state file's codec ---------------------------------------------------------------

TEST(WatchState, RoundTrips) {
  WatchState s;
  s.runs[7] = triggered_record(kStart + 100, kStart + 110);
  s.runs[8] =
      RunRecord{.start = kStart, .restart = 2, .time_limit_triggered = true, .time_limit_for = 61};
  s.runs[9] = RunRecord{.start = kStart, .triggered = true, .settled = true};
  RunRecord paused = triggered_record(kStart + 100, kStart + 110);
  paused.paused = paused.paused_admin = true;
  paused.time_limit_for = 4294967295U;
  paused.pause_note = "paused by root (admin) at 2026-11-24T02:44:34Z, grace 10 s";
  s.runs[10] = paused;
  s.draining[12] = kStart + 40;
  const std::string text = encode_watch_state(s);
  EXPECT_EQ(text,
            "slurm-preempt watcher 3\n"
            "run 7 1000000 0 t 1000100 1000110 0\n"
            "run 8 1000000 2 l 0 0 61\n"
            "run 9 1000000 0 ts 0 0 0\n"
            "run 10 1000000 0 tpa 1000100 1000110 4294967295 paused by root (admin) at "
            "2026-11-24T02:44:34Z, grace 10 s\n"
            "drain 12 1000040\n");
  std::string error;
  const auto back = decode_watch_state(text, &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(*back, s);
  EXPECT_TRUE(decode_watch_state(encode_watch_state(WatchState{}), &error));
}

// The watcher writes its file only when KeptState says a call changed what it holds.
TEST(KeptState, StateReadFromTheFileIsSaved) {
  KeptState k;
  EXPECT_FALSE(k.unsaved());
  WatchState s;
  s.runs[7] = triggered_record(kStart + 100, kStart + 110);
  s.draining[12] = kStart + 40;
  k.replace_saved(s);
  EXPECT_FALSE(k.unsaved());
  EXPECT_EQ(k.get(), s);
}

TEST(KeptState, KeepingTheRecordItHoldsChangesNothing) {
  KeptState k;
  const RunRecord r = triggered_record(kStart + 100, kStart + 110);
  k.keep(7, r);
  EXPECT_TRUE(k.unsaved());  // a new record
  k.saved();
  k.keep(7, r);
  EXPECT_FALSE(k.unsaved());
  RunRecord settled = r;
  settled.settled = true;
  k.keep(7, settled);
  EXPECT_TRUE(k.unsaved());
  EXPECT_EQ(k.runs().at(7), settled);
  k.saved();
  k.keep(7, settled);
  EXPECT_FALSE(k.unsaved());  // saved() cleared it; the same record again changes nothing
}

TEST(KeptState, ForgettingChangesOnlyWhatItHolds) {
  KeptState k;
  k.keep(7, triggered_record(kStart + 100, kStart + 110));
  k.keep(8, RunRecord{.start = kStart, .time_limit_triggered = true});
  k.saved();
  k.forget(9);
  EXPECT_FALSE(k.unsaved());
  k.forget(7);
  EXPECT_TRUE(k.unsaved());
  EXPECT_EQ(k.runs().count(7), 0U);
  k.saved();
  const auto next = k.forget(k.runs().find(8));
  EXPECT_EQ(next, k.runs().end());
  EXPECT_TRUE(k.unsaved());
  EXPECT_TRUE(k.runs().empty());
}

TEST(KeptState, DrainingChangesOnlyWithANewEnd) {
  KeptState k;
  k.drain(12, kStart + 40);
  EXPECT_TRUE(k.unsaved());
  k.saved();
  k.drain(12, kStart + 40);
  EXPECT_FALSE(k.unsaved());
  k.drain(12, kStart + 50);
  EXPECT_TRUE(k.unsaved());
  EXPECT_EQ(k.draining().at(12), kStart + 50);
  k.saved();
  EXPECT_EQ(k.undrain(k.draining().begin()), k.draining().end());
  EXPECT_TRUE(k.unsaved());
  EXPECT_TRUE(k.draining().empty());
}

// A file an earlier version wrote (before pauses were recorded) keeps its graces' promises.
TEST(WatchState, ReadsVersionOne) {
  std::string error;
  const auto s = decode_watch_state(
      "slurm-preempt watcher 1\nrun 7 1000000 0 t 1000100 1000110\ndrain 12 1000040\n", &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->runs.at(7), triggered_record(kStart + 100, kStart + 110));
  EXPECT_EQ(s->draining.at(12), kStart + 40);
  EXPECT_FALSE(decode_watch_state("slurm-preempt watcher 1\nrun 7 1 0 tp 1 2\n", &error));
}

// Version 2 (before the time limit a trigger was sent for was kept): read with 0 for it, which
// the next visit takes as the limit the trigger was sent for (Watch.ATimeLimitTriggerFrom...).
TEST(WatchState, ReadsVersionTwo) {
  std::string error;
  const auto s = decode_watch_state(
      "slurm-preempt watcher 2\nrun 8 1000000 2 l 0 0\n"
      "run 10 1000000 0 tp 1000100 1000110 paused by alice at 2026-11-24T02:44:34Z\n",
      &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->runs.at(8),
            (RunRecord{.start = kStart, .restart = 2, .time_limit_triggered = true}));
  EXPECT_EQ(s->runs.at(10).pause_note, "paused by alice at 2026-11-24T02:44:34Z");
  EXPECT_EQ(s->runs.at(10).time_limit_for, 0U);
  EXPECT_FALSE(decode_watch_state("slurm-preempt watcher 2\nrun 8 1 2 l 0 0 61\n", &error));
  EXPECT_EQ(error, "line 2: extra fields");
}

TEST(WatchState, RefusesWhatItDidNotWrite) {
  const std::string h = "slurm-preempt watcher 3\n";
  const std::pair<std::string, std::string> bad[] = {
      {"", "line 0: empty"},
      {"slurm-preempt watcher 4\n", "line 1: not a slurm-preempt watcher state, version 1, 2 or 3"},
      {h + "run 7 1 0 ta 1 2 0\n", "line 2: bad flags"},
      {h + "run 7 1 0 tp 1 2 0 " + std::string(1100, 'x') + "\n", "line 2: pause note too long"},
      {h + "run 7 1 0 t 1 2 0", "line 2: the last line has no newline (truncated?)"},
      {h + "run 0 1 0 t 1 2 0\n", "line 2: bad job id"},
      {h + "run 4294967296 1 0 t 1 2 0\n", "line 2: bad job id"},
      {h + "run 7 -1 0 t 1 2 0\n", "line 2: bad start time"},
      {h + "run 7 99999999999999 0 t 1 2 0\n", "line 2: bad start time"},
      {h + "run 7 1 x t 1 2 0\n", "line 2: bad restart"},
      {h + "run 7 1 0 tq 1 2 0\n", "line 2: bad flags"},
      {h + "run 7 1 0 t- 1 2 0\n", "line 2: bad flags"},
      {h + "run 7 1 0 t 1\n", "line 2: bad grace end"},
      {h + "run 7 1 0 t 1 2\n", "line 2: bad time limit"},
      {h + "run 7 1 0 l 1 2 -1\n", "line 2: bad time limit"},
      {h + "run 7 1 0 l 1 2 4294967296\n", "line 2: bad time limit"},
      {h + "run 7 1 0 t 1 2 0 3\n", "line 2: extra fields"},
      {h + "drain 7\n", "line 2: bad drain time"},
      {h + "walk 7 1\n", "line 2: unknown record"},
  };
  for (const auto& [text, why] : bad) {
    std::string error;
    EXPECT_FALSE(decode_watch_state(text, &error)) << text;
    EXPECT_EQ(error, why) << text;
  }
}

}  // namespace
}  // namespace sp
