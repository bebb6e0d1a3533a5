// The watcher's translation layer on real job_record_t layouts, without daemons.
#include "watch_adapter.hpp"

#include "job_state.hpp"

#include "pause_mark.hpp"

#include <gtest/gtest.h>

#include <string>

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/slurmctld/slurmctld.h"
}

namespace sp {
namespace {

constexpr PreemptEnd kRequeues{true, false};

class WatchAdapter : public ::testing::Test {
 protected:
  void SetUp() override {
    job.job_id = 42;
    job.details = &details;
    details.requeue = 1;
    details.submit_time = 900;
    details.begin_time = 1021;
    job.batch_flag = 1;
    job.job_state = JOB_RUNNING;
    job.start_time = 1000;
    job.end_time = 4600;
    job.time_limit = 60;
    job.restart_cnt = 2;
    job.warn_signal = kTriggerPreempt;
    env[0] = const_cast<char*>("OTHER=1");
    env[1] = control.data();
    job.spank_job_env = env;
    job.spank_job_env_size = 2;
  }

  job_record_t job{};
  struct job_details details {};
  std::string control =
      std::string(kControlEnvName) + "=signal=10,grace=20,lead=20,requeue=1,steps=all";
  char* env[2] = {};
};

TEST_F(WatchAdapter, FindsThePromiseOfAManagedJob) {
  const auto p = promise_of(job);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->signal, 10);
  EXPECT_EQ(p->grace_s, 20);
  EXPECT_TRUE(p->requeue);
}

// What the watcher's scan of the whole job list reads: fields only, the promise's presence from
// the warn signal alone.
TEST_F(WatchAdapter, ScanFactsAreReadFromFieldsAlone) {
  job.preempt_time = 1500;
  ScanFacts f = scan_facts(job, false);
  EXPECT_TRUE(f.managed);
  EXPECT_EQ(f.state, WatchedJob::State::Running);
  EXPECT_EQ(f.preempt, 1500);
  EXPECT_EQ(f.restarts, 2U);
  EXPECT_TRUE(f.has_details);
  EXPECT_EQ(f.submit, 900);
  EXPECT_EQ(f.begin, 1021);
  EXPECT_TRUE(f.time_limited);
  EXPECT_EQ(f.start, 1000);
  EXPECT_TRUE(may_hold_promise(job));
  job.warn_signal = 10;
  job.time_limit = INFINITE;
  job.job_state = JOB_PENDING;
  job.details = nullptr;
  f = scan_facts(job, false);
  EXPECT_FALSE(f.managed);
  EXPECT_EQ(f.state, WatchedJob::State::Pending);
  EXPECT_FALSE(f.time_limited);
  EXPECT_FALSE(f.has_details);
  job.job_state = JOB_COMPLETE;
  EXPECT_EQ(scan_facts(job, false).state, WatchedJob::State::Other);
}

// A job the gang scheduler suspended keeps the preempt time Slurm set then, resumed or not: it
// began no grace, and neither view shows one.
TEST_F(WatchAdapter, APreemptTimeOfAPreemptionThatSuspendsIsNoGrace) {
  job.preempt_time = 1500;
  EXPECT_EQ(scan_facts(job, true).preempt, 0);
  EXPECT_EQ(watched_job(job, nullptr, PreemptEnd{false, true}, StoryField::AdminComment).preempt,
            0);
  EXPECT_EQ(watched_job(job, nullptr, kRequeues, StoryField::AdminComment).preempt, 1500);
}

// slurm_job_preempt_mode's answer and slurm.conf's PreemptMode: only SUSPEND under GANG suspends
// (without GANG Slurm cancels the job); a mode with another flag (a partition's SUSPEND,WITHIN
// under preempt/partition_prio) is one Slurm gives a grace, as node_scheduler.c compares.
TEST_F(WatchAdapter, ASuspendedJobIsSaidSuspendedInBothViews) {
  job.job_state = JOB_SUSPENDED;
  EXPECT_TRUE(watched_job(job, nullptr, PreemptEnd{}, StoryField::AdminComment).suspended);
  EXPECT_TRUE(scan_facts(job, false).suspended);
  job.time_limit = INFINITE;
  EXPECT_EQ(watched_job(job, nullptr, PreemptEnd{}, StoryField::AdminComment).time_limit, 0U);
}

TEST(PreemptionSuspends, OnlySuspendUnderGang) {
  const uint16_t gang = PREEMPT_MODE_GANG;
  EXPECT_TRUE(preemption_suspends(PREEMPT_MODE_SUSPEND, PREEMPT_MODE_REQUEUE | gang));
  EXPECT_TRUE(preemption_suspends(PREEMPT_MODE_SUSPEND, PREEMPT_MODE_SUSPEND | gang));
  EXPECT_FALSE(preemption_suspends(PREEMPT_MODE_SUSPEND | PREEMPT_MODE_WITHIN, gang));
  EXPECT_FALSE(preemption_suspends(PREEMPT_MODE_SUSPEND, PREEMPT_MODE_SUSPEND));
  EXPECT_FALSE(preemption_suspends(PREEMPT_MODE_REQUEUE, PREEMPT_MODE_REQUEUE | gang));
  EXPECT_FALSE(preemption_suspends(PREEMPT_MODE_CANCEL, PREEMPT_MODE_CANCEL | gang));
  EXPECT_FALSE(preemption_suspends(PREEMPT_MODE_OFF, gang));
  EXPECT_FALSE(preemption_suspends(PREEMPT_MODE_SUSPEND | PREEMPT_MODE_REQUEUE, gang));
}

TEST_F(WatchAdapter, NoPromiseWithoutTheTriggerOrTheEntry) {
  job.warn_signal = 10;  // a user's own --signal: not ours
  EXPECT_FALSE(promise_of(job));
  job.warn_signal = kTriggerPreempt;
  job.spank_job_env_size = 1;
  EXPECT_FALSE(promise_of(job));
  job.spank_job_env = nullptr;
  EXPECT_FALSE(promise_of(job));
}

TEST_F(WatchAdapter, AnEntryThatOnlyStartsLikeOursIsNotOurs) {
  control = std::string(kControlEnvName) + "X=signal=10,grace=20";
  env[1] = control.data();
  EXPECT_FALSE(promise_of(job));
}

TEST_F(WatchAdapter, ARunningJobsFields) {
  const auto p = promise_of(job);
  const WatchedJob w = watched_job(job, &*p, kRequeues, StoryField::AdminComment);
  EXPECT_EQ(w.id, 42u);
  EXPECT_EQ(w.state, WatchedJob::State::Running);
  EXPECT_EQ(w.promise, &*p);
  EXPECT_EQ(w.start, 1000);
  EXPECT_EQ(w.end, 4600);
  EXPECT_EQ(w.preempt, 0);
  EXPECT_EQ(w.restarts, 2u);
  EXPECT_TRUE(w.time_limited);
  EXPECT_EQ(w.time_limit, 60U);
  EXPECT_FALSE(w.suspended);
  EXPECT_TRUE(w.preempt_requeues);
  EXPECT_TRUE(w.can_requeue);
  EXPECT_EQ(w.submit, 900);
  EXPECT_EQ(w.begin, 1021);
  EXPECT_FALSE(w.completing);
  EXPECT_FALSE(w.het);
  job.het_job_id = 42;
  EXPECT_TRUE(watched_job(job, &*p, kRequeues, StoryField::AdminComment).het);
}

TEST_F(WatchAdapter, States) {
  job.job_state = JOB_PENDING | JOB_COMPLETING;
  WatchedJob w = watched_job(job, nullptr, PreemptEnd{}, StoryField::AdminComment);
  EXPECT_EQ(w.state, WatchedJob::State::Pending);
  EXPECT_TRUE(w.completing);
  for (const uint32_t exited : {JOB_COMPLETE, JOB_FAILED, JOB_OOM, JOB_TIMEOUT}) {
    job.job_state = exited;
    EXPECT_EQ(watched_job(job, nullptr, PreemptEnd{}, StoryField::AdminComment).state,
              WatchedJob::State::Exited)
        << exited;
  }
  for (const uint32_t other : {JOB_CANCELLED, JOB_NODE_FAIL, JOB_PREEMPTED, JOB_SUSPENDED}) {
    job.job_state = other;
    EXPECT_EQ(watched_job(job, nullptr, PreemptEnd{}, StoryField::AdminComment).state,
              WatchedJob::State::Other)
        << other;
  }
  job.job_state = JOB_COMPLETE | JOB_REQUEUE;
  EXPECT_TRUE(watched_job(job, nullptr, PreemptEnd{}, StoryField::AdminComment).requeue_in_hand);
}

TEST_F(WatchAdapter, RequeueNeedsABatchJobThatAllowsIt) {
  job.batch_flag = 0;
  EXPECT_FALSE(watched_job(job, nullptr, kRequeues, StoryField::AdminComment).can_requeue);
  job.batch_flag = 1;
  details.requeue = 0;
  const WatchedJob w = watched_job(job, nullptr, kRequeues, StoryField::AdminComment);
  EXPECT_FALSE(w.can_requeue);
  EXPECT_FALSE(w.preempt_requeues);
  job.details = nullptr;
  EXPECT_FALSE(watched_job(job, nullptr, kRequeues, StoryField::AdminComment).has_details);
}

TEST_F(WatchAdapter, AFinishedMarkCountsOnlyInTheRunItWasMadeIn) {
  // start_time 1000: a mark at 1005 is this run's, one at 990 an earlier run's.
  std::string story =
      "jobstats {\"x\": 1} slurm-preempt: " + note_finished("alice", false, 1005) + ";";
  job.admin_comment = story.data();
  EXPECT_TRUE(watched_job(job, nullptr, PreemptEnd{}, StoryField::AdminComment).said_finished);
  story = "slurm-preempt: " + note_finished("alice", false, 990) + ";";
  job.admin_comment = story.data();
  EXPECT_FALSE(watched_job(job, nullptr, PreemptEnd{}, StoryField::AdminComment).said_finished);
  job.admin_comment = nullptr;
  EXPECT_FALSE(watched_job(job, nullptr, PreemptEnd{}, StoryField::AdminComment).said_finished);
}

TEST_F(WatchAdapter, ExitStatus) {
  job.exit_code = 3 << 8;  // exited 3
  EXPECT_EQ(watched_job(job, nullptr, PreemptEnd{}, StoryField::AdminComment).exit_status, 3);
  job.exit_code = 9;  // killed by SIGKILL
  EXPECT_EQ(watched_job(job, nullptr, PreemptEnd{}, StoryField::AdminComment).exit_status, 137);
  job.time_limit = INFINITE;
  EXPECT_FALSE(watched_job(job, nullptr, PreemptEnd{}, StoryField::AdminComment).time_limited);
}

}  // namespace
}  // namespace sp
