// lib/pause: the request codec, the AdminComment marks, and every path of the decision.
#include "pause.hpp"

#include <gtest/gtest.h>

#include "checkpoint.hpp"

namespace sp {
namespace {

constexpr int64_t kT = 1'795'000'000;  // 2026-11-18

TEST(PauseRequest, EncodesAndDecodesBothKinds) {
  const PauseRequest pause{PauseRequest::Kind::Pause, -1};
  const PauseRequest pause30{PauseRequest::Kind::Pause, 30};
  const PauseRequest resume{PauseRequest::Kind::Resume, -1};
  EXPECT_EQ(encode_pause_request(pause), "slurm-preempt:pause");
  EXPECT_EQ(encode_pause_request(pause30), "slurm-preempt:pause grace=30");
  EXPECT_EQ(encode_pause_request(resume), "slurm-preempt:resume");
  const PauseRequest finished{PauseRequest::Kind::Finished, -1};
  EXPECT_EQ(encode_pause_request(finished), "slurm-preempt:finished");
  for (const auto& r : {pause, pause30, resume, finished}) {
    EXPECT_EQ(decode_pause_request(encode_pause_request(r)), r);
  }
}

TEST(PauseRequest, AnythingElseIsNotARequestOrIsMalformed) {
  EXPECT_FALSE(is_pause_request("my comment"));
  EXPECT_FALSE(decode_pause_request("my comment"));
  for (const char* bad : {"slurm-preempt:", "slurm-preempt:pausex",
                          "slurm-preempt:pause grace=", "slurm-preempt:pause grace=-1",
                          "slurm-preempt:pause grace=1x", "slurm-preempt:pause grace=999999999999",
                          "slurm-preempt:resume now", "slurm-preempt:pause  grace=3",
                          "slurm-preempt:finished now", "slurm-preempt:finish"}) {
    EXPECT_TRUE(is_pause_request(bad)) << bad;
    EXPECT_FALSE(decode_pause_request(bad)) << bad;
  }
}

TEST(PauseMarks, TheLastMarkWinsAndCarriesWhoAndWhen) {
  EXPECT_EQ(last_pause_mark(""), PauseMark{});
  const std::string paused = "slurm-preempt: " + note_paused("erin", false, kT, 30) + ";";
  EXPECT_EQ(paused, "slurm-preempt: paused by erin at " + format_utc(kT) + ", grace 30 s;");
  EXPECT_EQ(last_pause_mark("x; " + paused), (PauseMark{true, false, kT, true, "erin"}));
  const std::string resumed =
      paused + " slurm-preempt: " + note_resumed("root", true, kT + 60) + ";";
  EXPECT_EQ(last_pause_mark(resumed), (PauseMark{false, true, kT + 60, false, "root"}));
  const std::string again =
      resumed + " slurm-preempt: " + note_paused("root", true, kT + 120, -1) + ";";
  EXPECT_EQ(last_pause_mark(again), (PauseMark{true, true, kT + 120, false, "root"}));  // pending
  EXPECT_NE(again.find("held while pending"), std::string::npos);
  // A forged or damaged time reads as 0: never a pause under way.
  EXPECT_EQ(last_pause_mark("slurm-preempt: paused by x at yesterday;").at, 0);
  // A mark with no name, whose " at " starts inside the mark (a user's Comment can hold one):
  // read without a name or a time, never past the mark's end.
  EXPECT_EQ(last_pause_mark("slurm-preempt: paused by at x"),
            (PauseMark{true, false, 0, false, ""}));
  EXPECT_EQ(last_pause_mark("slurm-preempt: resumed by at x"),
            (PauseMark{false, false, 0, false, ""}));
  EXPECT_EQ(last_pause_mark("slurm-preempt: paused by  at 2026-11-18T11:06:40Z;").at, kT);
}

// What the sentinel reads of `scontrol show job` (SLURM_TIME_FORMAT=%s) for a pause's notice.
TEST(PauseMarks, TheFinishedMarkSaysWhenAndIsNotAPauseOrResume) {
  EXPECT_EQ(last_finished_at(""), 0);
  const std::string said = "slurm-preempt: " + note_finished("alice", false, kT) + ";";
  EXPECT_EQ(said,
            "slurm-preempt: finished by alice at 2026-11-18T11:06:40Z: not requeued if it "
            "exits 0 in a grace;");
  EXPECT_EQ(last_finished_at("jobstats {...} " + said), kT);
  const std::string twice = said + " slurm-preempt: " + note_finished("root", true, kT + 9) + ";";
  EXPECT_EQ(last_finished_at(twice), kT + 9);
  EXPECT_EQ(last_pause_mark(twice), PauseMark{});  // not a pause or resume mark
  EXPECT_EQ(last_finished_at("slurm-preempt: finished by x at soon;"), 0);
  EXPECT_EQ(last_finished_at("slurm-preempt: finished by x"), 0);
}

TEST(PauseMarks, ShownPauseReadsEndTimeAndTheStorysLastMark) {
  const std::string show =
      "JobId=7 JobName=x EndTime=1 Deadline=2\n"  // a job name cannot forge the time line
      "   RunTime=00:00:05 TimeLimit=00:30:00 TimeMin=N/A\n"
      "   SubmitTime=" +
      std::to_string(kT - 50) + " EligibleTime=" + std::to_string(kT - 50) +
      "\n   StartTime=" + std::to_string(kT - 40) + " EndTime=" + std::to_string(kT + 7) +
      " Deadline=N/A\n   WorkDir=/tmp\n   AdminComment=slurm-preempt: " +
      note_paused("erin", false, kT, 7) + "; \n   Comment=slurm-preempt: paused by mallory at " +
      format_utc(kT) + ", grace 1 s;\n";
  const ShownPause s = shown_pause(show);
  EXPECT_EQ(s.end_time, kT + 7);
  EXPECT_EQ(s.mark, (PauseMark{true, false, kT, true, "erin"}));  // never the user's Comment
  // An administrator's pause recorded in SystemComment is read when AdminComment has none.
  const ShownPause admin = shown_pause(
      "   StartTime=5 EndTime=Unknown Deadline=N/A\n"
      "   SystemComment=slurm-preempt: " +
      note_paused("root", true, kT, 3) + ";\n");
  EXPECT_EQ(admin.end_time, 0);
  EXPECT_EQ(admin.mark.who, "root");
  EXPECT_TRUE(admin.mark.admin);
  EXPECT_EQ(shown_pause(""), ShownPause{});
  // The story in Comment (story.field: comment), after jobstats-like text: read when neither
  // AdminComment nor SystemComment has a mark.
  const ShownPause in_comment = shown_pause(
      "   StartTime=5 EndTime=9 Deadline=N/A\n"
      "   AdminComment=JS1:{\"a\":\"b;c\"} \n"
      "   Comment=my run slurm-preempt: " +
      note_paused("erin", false, kT, 3) + "; \n");
  EXPECT_EQ(in_comment.end_time, 9);
  EXPECT_EQ(in_comment.mark, (PauseMark{true, false, kT, true, "erin"}));
}

TEST(PauseMarks, PausingOnlyInTheRunAndGraceThePauseStarted) {
  const PauseMark m{true, false, kT, true, ""};
  EXPECT_TRUE(pausing(m, kT - 100, kT));
  // A pending job's hold, even in the second its next run starts, does not pause that run.
  EXPECT_FALSE(pausing(PauseMark{true, false, kT, false, ""}, kT, kT));
  EXPECT_FALSE(pausing(m, kT + 5, kT + 10));  // paused while pending; this run came later
  EXPECT_FALSE(pausing(m, kT - 100, 0));      // no grace under way
  EXPECT_FALSE(pausing(PauseMark{false, false, kT, false, ""}, kT - 100, kT));
  EXPECT_FALSE(pausing(PauseMark{true, false, 0, false, ""}, 0, kT));
}

class PauseDecide : public ::testing::Test {
 protected:
  PauseDecide() {
    running.state = PauseJobView::State::Running;
    running.batch = running.requeue = running.managed = running.preempt_requeues = true;
    running.promise_grace_s = 60;
    running.start = kT - 100;
    running.owner = 1001;
    pending.state = PauseJobView::State::Pending;
    pending.owner = 1001;
  }
  PauseJobView running, pending;
  PauseRequester owner{1001, false, false};
  PauseRequester other{1002, false, false};
  PauseRequest pause{PauseRequest::Kind::Pause, -1};
  PauseRequest resume{PauseRequest::Kind::Resume, -1};
};

TEST_F(PauseDecide, ARunningManagedBatchJobPausesWithItsOwnGraceOrLess) {
  auto d = decide_pause(running, owner, pause);
  EXPECT_EQ(d.outcome, PauseOutcome::StartPause);
  EXPECT_EQ(d.grace_s, 60);
  d = decide_pause(running, owner, {PauseRequest::Kind::Pause, 10});
  EXPECT_EQ(d.grace_s, 10);
  d = decide_pause(running, owner, {PauseRequest::Kind::Pause, 0});
  EXPECT_EQ(d.outcome, PauseOutcome::StartPause);
  EXPECT_EQ(d.grace_s, 0);
  d = decide_pause(running, owner, {PauseRequest::Kind::Pause, 61});
  EXPECT_EQ(d.error, PauseError::GraceTooLong);
}

TEST_F(PauseDecide, SlurmsRequeueRuleSaysWhoMay) {
  EXPECT_EQ(decide_pause(running, other, pause).error, PauseError::NotAllowed);
  EXPECT_EQ(decide_pause(pending, other, pause).error, PauseError::NotAllowed);
  EXPECT_EQ(decide_pause(running, {1002, true, false}, pause).outcome, PauseOutcome::StartPause);
  EXPECT_EQ(decide_pause(running, {1002, false, true}, pause).outcome, PauseOutcome::StartPause);
}

TEST_F(PauseDecide, WhatCannotBeRequeuedOrSavedIsRefused) {
  PauseJobView j = running;
  j.state = PauseJobView::State::Suspended;
  EXPECT_EQ(decide_pause(j, owner, pause).error, PauseError::Suspended);
  j = running;
  j.batch = false;
  EXPECT_EQ(decide_pause(j, owner, pause).error, PauseError::Interactive);
  j = running;
  j.requeue = false;
  EXPECT_EQ(decide_pause(j, owner, pause).error, PauseError::NoRequeue);
  j = running;
  j.managed = false;
  EXPECT_EQ(decide_pause(j, owner, pause).error, PauseError::NoCheckpoint);
  j = running;
  j.promise_grace_s = -1;  // managed, but its promise gives no grace to save in
  EXPECT_EQ(decide_pause(j, owner, pause).error, PauseError::NoCheckpoint);
  j = running;
  j.preempt_requeues = false;  // its QOS' PreemptMode is CANCEL (or OFF, SUSPEND)
  EXPECT_EQ(decide_pause(j, owner, pause).error, PauseError::PreemptCancels);
  j.state = PauseJobView::State::Pending;  // a pending job is only held: no grace to end
  EXPECT_EQ(decide_pause(j, owner, pause).outcome, PauseOutcome::HoldPending);
  j = running;
  j.preempt = kT;  // a preemption's grace
  EXPECT_EQ(decide_pause(j, owner, pause).error, PauseError::BeingPreempted);
  j.state = PauseJobView::State::Finished;
  EXPECT_EQ(decide_pause(j, owner, pause).error, PauseError::Finished);
  EXPECT_EQ(decide_pause(j, owner, resume).error, PauseError::Finished);
}

TEST_F(PauseDecide, AHeterogeneousJobsComponentIsNotPausedButMayBeResumedOrFinish) {
  for (PauseJobView j : {running, pending}) {
    j.het = true;
    EXPECT_EQ(decide_pause(j, owner, pause).error, PauseError::HetJob);
    EXPECT_EQ(decide_pause(j, other, pause).error, PauseError::NotAllowed);  // who comes first
  }
  PauseJobView j = running;
  j.het = true;
  EXPECT_EQ(decide_pause(j, owner, resume).error, PauseError::NotPaused);
  EXPECT_EQ(decide_pause(j, owner, {PauseRequest::Kind::Finished, -1}).outcome,
            PauseOutcome::MarkFinished);  // a note only: no grace starts
  j = pending;
  j.het = true;
  j.held = true;
  j.user_hold = true;
  j.mark = {true, false, kT, false, ""};  // held by a pause: a release sets no grace
  EXPECT_EQ(decide_pause(j, owner, resume).outcome, PauseOutcome::Release);
}

TEST_F(PauseDecide, PausingTwiceIsIdempotent) {
  PauseJobView j = running;
  j.preempt = kT;
  j.mark = {true, false, kT, true, ""};
  EXPECT_EQ(decide_pause(j, owner, pause).outcome, PauseOutcome::AlreadyPaused);
  EXPECT_EQ(decide_pause(pending, owner, pause).outcome, PauseOutcome::HoldPending);
  PauseJobView held = pending;
  held.held = true;
  EXPECT_EQ(decide_pause(held, owner, pause).outcome, PauseOutcome::AlreadyPaused);
}

TEST_F(PauseDecide, ResumeReleasesOnlyAPausedHeldJob) {
  PauseJobView j = pending;
  j.held = true;
  j.user_hold = true;
  j.mark = {true, false, kT, false, ""};
  EXPECT_EQ(decide_pause(j, owner, resume).outcome, PauseOutcome::Release);
  EXPECT_EQ(decide_pause(j, other, resume).error, PauseError::NotAllowed);
  j.mark.paused = false;  // held by something else
  EXPECT_EQ(decide_pause(j, owner, resume).error, PauseError::NotPaused);
  EXPECT_EQ(decide_pause(pending, owner, resume).error, PauseError::NotPaused);
  EXPECT_EQ(decide_pause(running, owner, resume).error, PauseError::NotPaused);
  PauseJobView saving = running;
  saving.preempt = kT;
  saving.mark = {true, false, kT, true, ""};
  EXPECT_EQ(decide_pause(saving, owner, resume).error, PauseError::StillPausing);
}

// A user's pause that an administrator has held since (scontrol hold, JobHeldAdmin), or whose
// user hold was released and another hold set: Slurm lets only an operator release those, and
// a resume must not be a way around that.
TEST_F(PauseDecide, AHoldOtherThanTheUsersIsReleasedOnlyByAnOperator) {
  PauseJobView j = pending;
  j.held = true;
  j.user_hold = false;
  j.mark = {true, false, kT, false, ""};  // the user's own pause mark
  EXPECT_EQ(decide_pause(j, owner, resume).error, PauseError::AdminHold);
  EXPECT_EQ(decide_pause(j, {1002, false, true}, resume).error, PauseError::AdminHold);
  EXPECT_EQ(decide_pause(j, {0, true, false}, resume).outcome, PauseOutcome::Release);
  j.user_hold = true;
  EXPECT_EQ(decide_pause(j, owner, resume).outcome, PauseOutcome::Release);
  EXPECT_EQ(decide_pause(j, {1002, false, true}, resume).outcome, PauseOutcome::Release);
}

TEST_F(PauseDecide, AnAdministratorsPauseIsReleasedByAnAdministrator) {
  PauseJobView j = pending;
  j.held = true;
  j.mark = {true, true, kT, false, ""};
  EXPECT_EQ(decide_pause(j, owner, resume).error, PauseError::AdminPause);
  // A coordinator of the job's account may pause and resume its jobs, not an administrator's pause.
  EXPECT_EQ(decide_pause(j, {1002, false, true}, resume).error, PauseError::AdminPause);
  EXPECT_EQ(decide_pause(j, {0, true, false}, resume).outcome, PauseOutcome::Release);
}

TEST_F(PauseDecide, FinishedIsNotedForARunningJobByWhoMayRequeueIt) {
  const PauseRequest finished{PauseRequest::Kind::Finished, -1};
  EXPECT_EQ(decide_pause(running, owner, finished).outcome, PauseOutcome::MarkFinished);
  PauseJobView j = running;
  j.preempt = kT;  // in its grace: the moment it matters
  EXPECT_EQ(decide_pause(j, owner, finished).outcome, PauseOutcome::MarkFinished);
  j.mark = {true, false, kT, true, ""};  // in a pause's grace
  EXPECT_EQ(decide_pause(j, owner, finished).outcome, PauseOutcome::MarkFinished);
  EXPECT_EQ(decide_pause(running, {1002, true, false}, finished).outcome,
            PauseOutcome::MarkFinished);
  EXPECT_EQ(decide_pause(running, other, finished).error, PauseError::NotAllowed);
  EXPECT_EQ(decide_pause(pending, owner, finished).error, PauseError::NotRunning);
  j = running;
  j.state = PauseJobView::State::Suspended;
  EXPECT_EQ(decide_pause(j, owner, finished).error, PauseError::NotRunning);
  j.state = PauseJobView::State::Finished;
  EXPECT_EQ(decide_pause(j, owner, finished).error, PauseError::Finished);
}

TEST(PauseErrorText, EveryRefusalIsOneLineThatSaysWhatToDo) {
  for (auto e : {PauseError::NotAllowed, PauseError::Finished, PauseError::Interactive,
                 PauseError::NoRequeue, PauseError::NoCheckpoint, PauseError::GraceTooLong,
                 PauseError::BeingPreempted, PauseError::NotPaused, PauseError::StillPausing,
                 PauseError::AdminPause, PauseError::AdminHold, PauseError::Suspended,
                 PauseError::NotRunning, PauseError::HetJob, PauseError::PreemptCancels}) {
    const std::string t = pause_error_text(e, 42, 60);
    EXPECT_EQ(t.find('\n'), std::string::npos);
    EXPECT_EQ(t.rfind("job 42", 0), 0u) << t;
  }
  EXPECT_NE(pause_error_text(PauseError::GraceTooLong, 42, 60).find("60 s"), std::string::npos);
  EXPECT_EQ(pause_error_text(PauseError::None, 42, 60), "");
}

TEST(PauseClient, JobIdsAreNumbersOrArrayTasks) {
  for (const char* ok : {"1", "123", "123_4", "4294967294"}) EXPECT_TRUE(valid_job_id(ok)) << ok;
  for (const char* bad :
       {"", "abc", "12a", "_4", "123_", "123_4_5", "-1", "123 4", "1;rm", "12345678901"}) {
    EXPECT_FALSE(valid_job_id(bad)) << bad;
  }
}

TEST(PauseClient, SlurmsErrorTextMapsBackToTheRefusal) {
  using K = PauseRequest::Kind;
  EXPECT_EQ(pause_error_from_slurm("slurm_update error: Access/permission denied", K::Pause, false),
            PauseError::NotAllowed);
  EXPECT_EQ(pause_error_from_slurm("Access/permission denied", K::Resume, true),
            PauseError::AdminPause);
  EXPECT_EQ(pause_error_from_slurm("Requested operation is presently disabled", K::Pause, false),
            PauseError::NoRequeue);
  EXPECT_EQ(pause_error_from_slurm("Job can not be altered now, try again later", K::Resume, false),
            PauseError::StillPausing);
  EXPECT_EQ(pause_error_from_slurm("Job can not be altered now, try again later", K::Pause, false),
            PauseError::BeingPreempted);
  EXPECT_EQ(pause_error_from_slurm("slurm_update error: Job is in held state, pending scheduler "
                                   "release",
                                   K::Resume, false),
            PauseError::AdminHold);
  EXPECT_EQ(pause_error_from_slurm("Job is no longer pending execution", K::Resume, false),
            PauseError::NotPaused);
  EXPECT_EQ(pause_error_from_slurm("Only batch jobs are accepted or processed", K::Pause, false),
            PauseError::Interactive);
  EXPECT_EQ(pause_error_from_slurm("Invalid time specified", K::Pause, false),
            PauseError::GraceTooLong);
  EXPECT_EQ(pause_error_from_slurm("Job/step already completing or completed", K::Pause, false),
            PauseError::Finished);
  EXPECT_EQ(pause_error_from_slurm("Job is not running", K::Finished, false),
            PauseError::NotRunning);
  EXPECT_EQ(pause_error_from_slurm("Operation not permitted on individual component of "
                                   "heterogeneous job",
                                   K::Pause, false),
            PauseError::HetJob);
  EXPECT_EQ(pause_error_from_slurm("Invalid qos specification", K::Pause, false),
            PauseError::PreemptCancels);
  EXPECT_EQ(pause_error_from_slurm("something else", K::Pause, false), PauseError::None);
}

TEST(PauseClient, AnUpdateRefusedUntilSlurmdbdHasTheJobIsSentAgainWithinTheBudget) {
  const std::string said =
      "slurm_update error: Job update not available right now, the DB index is being set, try "
      "again in a bit";
  using R = RefusedUpdate;
  EXPECT_EQ(after_refused_update(said, 0), R::SendAgain);
  EXPECT_EQ(after_refused_update(said, kUpdateRetryBudgetMs - 1), R::SendAgain);
  EXPECT_EQ(after_refused_update(said, kUpdateRetryBudgetMs), R::GiveUp);  // the budget is spent
  EXPECT_EQ(after_refused_update(said, 5000, 5000), R::GiveUp);
  // Every other refusal is reported as it is, at once or after retries (the index came, then
  // Slurm refused for its own reason): sending it again would change nothing.
  for (const char* other :
       {"Access/permission denied", "Job can not be altered now, try again later",
        "Invalid job id specified", ""}) {
    EXPECT_EQ(after_refused_update(other, 0), R::Report) << other;
    EXPECT_EQ(after_refused_update(other, kUpdateRetryBudgetMs), R::Report) << other;
  }
  // Nor is it a pause refusal of ours.
  EXPECT_EQ(pause_error_from_slurm(said, PauseRequest::Kind::Pause, false), PauseError::None);
  const std::string waiting = send_again_text("123_4", 60, false);
  const std::string gave_up = send_again_text("123_4", 60, true);
  for (const std::string& t : {waiting, gave_up}) {
    EXPECT_EQ(t.rfind("job 123_4: ", 0), 0u) << t;
    EXPECT_EQ(t.find('\n'), std::string::npos) << t;
    EXPECT_NE(t.find("60 s"), std::string::npos) << t;
  }
  EXPECT_NE(waiting.find("sending the request again"), std::string::npos) << waiting;
  EXPECT_NE(gave_up.find("check that slurmdbd runs"), std::string::npos) << gave_up;
}

// Alice's job (started: its record holds her name), SlurmUser 64030 "slurm", asked by `uid`.
RequesterNames asked_of_alices_job(uint32_t uid) {
  RequesterNames n;
  n.uid = uid;
  n.owner_uid = 1001;
  n.owner_name = "alice";
  n.slurm_user_id = 64030;
  n.slurm_user_name = "slurm";
  return n;
}

TEST(PauseRequesterName, TheOwnerByTheJobsOwnName) {
  RequesterNames n = asked_of_alices_job(1001);
  n.db_name = "alice-db";
  EXPECT_EQ(requester_name(n), "alice");
}

TEST(PauseRequesterName, ThePendingOwnerWhoseRecordHasNoNameYetByTheDatabases) {
  RequesterNames n = asked_of_alices_job(1001);
  n.owner_name = "";
  n.db_name = "alice";
  EXPECT_EQ(requester_name(n), "alice");
}

TEST(PauseRequesterName, AnotherUserByTheDatabasesNameNotTheOwners) {
  RequesterNames n = asked_of_alices_job(1002);
  n.db_name = "bob";
  EXPECT_EQ(requester_name(n), "bob");
}

TEST(PauseRequesterName, RootAndSlurmUserWithoutADatabaseUser) {
  EXPECT_EQ(requester_name(asked_of_alices_job(0)), "root");
  EXPECT_EQ(requester_name(asked_of_alices_job(64030)), "slurm");
  RequesterNames unnamed = asked_of_alices_job(64030);
  unnamed.slurm_user_name = "";
  EXPECT_EQ(requester_name(unnamed), "64030");
}

TEST(PauseRequesterName, AnUnknownUidInDigits) {
  EXPECT_EQ(requester_name(asked_of_alices_job(4242)), "4242");
}

TEST(PauseClient, ReachedMeansHeldForAPauseAndNotHeldForAResume) {
  using K = PauseRequest::Kind;
  EXPECT_TRUE(reached(K::Pause, "PENDING", "JobHeldUser"));
  EXPECT_TRUE(reached(K::Pause, "PENDING", "JobHeldAdmin"));
  EXPECT_FALSE(reached(K::Pause, "RUNNING", "None"));
  EXPECT_FALSE(reached(K::Pause, "PENDING", "BeginTime"));
  EXPECT_TRUE(reached(K::Resume, "RUNNING", "None"));
  EXPECT_TRUE(reached(K::Resume, "PENDING", "Priority"));
  EXPECT_FALSE(reached(K::Resume, "PENDING", "JobHeldUser"));
  EXPECT_FALSE(reached(K::Resume, "COMPLETED", "None"));
}

TEST(PauseClient, TheNotedGraceIsTheLastPauses) {
  const std::string story = "slurm-preempt: " + note_paused("erin", false, kT, 30) +
                            "; slurm-preempt: " + note_resumed("erin", false, kT + 5) +
                            "; slurm-preempt: " + note_paused("erin", false, kT + 9, 7) + ";";
  EXPECT_EQ(noted_pause_grace(story), 7);
  EXPECT_EQ(noted_pause_grace("slurm-preempt: " + note_paused("erin", false, kT, -1) + ";"), -1);
  EXPECT_EQ(noted_pause_grace(""), -1);
}

TEST(PauseClient, SqueuesArrayRecordsExpandToTheirTasks) {
  EXPECT_EQ(expand_array_id("123"), std::vector<std::string>{"123"});
  EXPECT_EQ(expand_array_id("123_4"), std::vector<std::string>{"123_4"});
  EXPECT_EQ(expand_array_id("123_[1-3,7]"),
            (std::vector<std::string>{"123_1", "123_2", "123_3", "123_7"}));
  EXPECT_EQ(expand_array_id("123_[13-1000]").size(), 988u);
  for (const char* bad : {"", "x", "123_[", "123_[]", "123_[3-1]", "123_[a]", "123_[1-2", "_[1]"}) {
    EXPECT_TRUE(expand_array_id(bad).empty()) << bad;
  }
  EXPECT_TRUE(expand_array_id("1_[0-4294967295]").empty());  // bounded
  EXPECT_EQ(expand_array_id("1_[0-9]", 10).size(), 10u);
  EXPECT_TRUE(expand_array_id("1_[0-10]", 10).empty());
}

}  // namespace
}  // namespace sp
