#include "checkpoint.hpp"

#include <gtest/gtest.h>

#include <csignal>

#include "decide.hpp"

namespace sp {
namespace {

TEST(CheckpointSignal, ParsesNamesNumbersAndSeconds) {
  std::string err;
  EXPECT_EQ(parse_checkpoint_signal("USR1", &err), (CheckpointSignalOption{SIGUSR1, -1}));
  EXPECT_EQ(parse_checkpoint_signal("SIGUSR2@90", &err), (CheckpointSignalOption{SIGUSR2, 90}));
  EXPECT_EQ(parse_checkpoint_signal("15@5", &err), (CheckpointSignalOption{SIGTERM, 5}));
  EXPECT_TRUE(err.empty());
}

TEST(CheckpointSignal, RefusesBadValuesWithOneClearLine) {
  for (const char* bad : {"FOO", "USR1@-5", "USR1@0", "USR1@99999999", "USR1@1e3", "KILL", "STOP",
                          "61", "", "USR1@"}) {
    std::string err;
    EXPECT_FALSE(parse_checkpoint_signal(bad, &err)) << bad;
    EXPECT_NE(err.find("--checkpoint-signal"), std::string::npos) << bad;
    EXPECT_NE(err.find("SIG[@SECONDS]"), std::string::npos) << bad;
    EXPECT_EQ(err.find('\n'), std::string::npos) << bad;
  }
}

TEST(CheckpointDir, MustBeAbsoluteWithoutDotDot) {
  std::string err;
  EXPECT_TRUE(valid_checkpoint_dir("/home/alice/ckpt", &err));
  EXPECT_FALSE(valid_checkpoint_dir("ckpt", &err));
  EXPECT_NE(err.find("absolute"), std::string::npos);
  EXPECT_FALSE(valid_checkpoint_dir("/home/alice/../bob", &err));
  EXPECT_FALSE(valid_checkpoint_dir("/home/..", &err));
  EXPECT_TRUE(valid_checkpoint_dir("/home/alice/..hidden", &err));
}

TEST(CheckpointEncoding, RoundTripsAndRejectsGarbage) {
  JobCheckpoint c{SIGUSR2, 45, 90, true, false, ""};
  EXPECT_EQ(decode_checkpoint(encode_checkpoint(c)), c);
  EXPECT_FALSE(decode_checkpoint("grace=5"));
  EXPECT_FALSE(decode_checkpoint("signal=99"));
  EXPECT_FALSE(decode_checkpoint("signal=10,grace=-1"));
  EXPECT_FALSE(decode_checkpoint("signal=10,steps=some"));
  EXPECT_TRUE(decode_checkpoint("signal=10,future=7"));
}

TEST(CheckpointEncoding, CarriesTheDirectoryLastEvenWithCommas) {
  JobCheckpoint c{SIGUSR1, 60, 60, true, true, "/scratch/a,b/ckpt=1"};
  EXPECT_EQ(encode_checkpoint(c),
            "signal=10,grace=60,lead=60,requeue=1,steps=gpu,dir=/scratch/a,b/ckpt=1");
  EXPECT_EQ(decode_checkpoint(encode_checkpoint(c)), c);
  EXPECT_FALSE(decode_checkpoint("signal=10,dir=relative"));
  EXPECT_FALSE(decode_checkpoint("signal=10,dir=/a/../b"));
}

TEST(CheckpointEnvironment, NamesEveryVariableAndTheDirectoryOnlyWhenThereIsOne) {
  CheckpointPolicy p;
  p.dir_env = "CKPT_DIR";
  p.notice_file = "notice";
  using Env = std::vector<std::pair<std::string, std::string>>;
  const Env without = checkpoint_environment({SIGUSR2, 45, 90, false, false, ""}, p);
  EXPECT_EQ(without, (Env{{"SLURM_CHECKPOINT_SIGNAL", "USR2"},
                          {"SLURM_CHECKPOINT_GRACE", "45"},
                          {"SLURM_CHECKPOINT_LEAD", "90"},
                          {"SLURM_CHECKPOINT_REQUEUE", "0"},
                          {"SLURM_CHECKPOINT_STEPS", "all"}}));
  const Env with = checkpoint_environment({SIGUSR1, 60, 60, true, true, "/c"}, p);
  ASSERT_EQ(with.size(), 7u);
  EXPECT_EQ(with[4], (std::pair<std::string, std::string>{"SLURM_CHECKPOINT_STEPS", "gpu"}));
  EXPECT_EQ(with[5], (std::pair<std::string, std::string>{"CKPT_DIR", "/c"}));
  EXPECT_EQ(with[6], (std::pair<std::string, std::string>{"SLURM_CHECKPOINT_NOTICE", "/c/notice"}));
}

Policy standby_policy() {
  Policy p;
  p.qos = default_qos();
  finalize(p);
  return p;
}

TEST(ResolveCheckpoint, StandbyJobsGetThePolicyDefaultWithoutAnyOption) {
  const Policy p = standby_policy();
  std::string err;
  CheckpointRequest req;
  req.requeue = true;
  const auto c = resolve_checkpoint(req, p, p.find_qos("standby"), &err);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->signal, SIGUSR1);
  EXPECT_EQ(c->grace_s, p.grace_for(*p.find_qos("standby")));
  EXPECT_EQ(c->lead_s, c->grace_s);
  EXPECT_TRUE(c->requeue);
  EXPECT_FALSE(c->gpu_steps_only);  // steps: all by default
  EXPECT_NE(encode_checkpoint(*c).find(",steps=all"), std::string::npos);
}

TEST(ResolveCheckpoint, NonPreemptibleJobsWithoutOptionsGetNothing) {
  const Policy p = standby_policy();
  std::string err;
  EXPECT_FALSE(resolve_checkpoint({}, p, p.find_qos("normal"), &err));
  EXPECT_TRUE(err.empty());
}

TEST(ResolveCheckpoint, AZeroGraceWithoutOptionsPromisesNothing) {
  Policy p = standby_policy();
  for (auto& q : p.qos) q.grace_s = 0;
  std::string err;
  EXPECT_FALSE(resolve_checkpoint({}, p, p.find_qos("standby"), &err));
  CheckpointRequest req;
  req.dir_option = "/ckpt";
  EXPECT_TRUE(resolve_checkpoint(req, p, p.find_qos("standby"), &err));
}

TEST(ResolveCheckpoint, SecondsMayShortenButNotExtendTheQosGrace) {
  const Policy p = standby_policy();
  const QosRule* standby = p.find_qos("standby");
  const int64_t grace = p.grace_for(*standby);
  std::string err;
  CheckpointRequest req;
  const std::string shorter = "USR2@" + std::to_string(grace - 1);
  req.signal_option = shorter;
  auto c = resolve_checkpoint(req, p, standby, &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->signal, SIGUSR2);
  EXPECT_EQ(c->grace_s, grace - 1);

  const std::string longer = "USR1@" + std::to_string(grace + 1);
  req.signal_option = longer;
  EXPECT_FALSE(resolve_checkpoint(req, p, standby, &err));
  EXPECT_NE(err.find("at most " + std::to_string(grace) + " s"), std::string::npos) << err;
}

TEST(ResolveCheckpoint, TakesOverAUsersSignalOnPreemptibleJobs) {
  const Policy p = standby_policy();
  std::string err;
  CheckpointRequest req;
  req.user_signal = SIGUSR2;
  req.user_seconds = 10;
  const auto c = resolve_checkpoint(req, p, p.find_qos("standby"), &err);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->signal, SIGUSR2);
  EXPECT_EQ(c->grace_s, 10);
  // On a job that is never preempted, --signal keeps Slurm's own meaning.
  EXPECT_FALSE(resolve_checkpoint(req, p, p.find_qos("normal"), &err));
}

TEST(ResolveCheckpoint, ABadDirIsRefused) {
  const Policy p = standby_policy();
  std::string err;
  CheckpointRequest req;
  req.dir_option = "relative/dir";
  EXPECT_FALSE(resolve_checkpoint(req, p, p.find_qos("standby"), &err));
  EXPECT_NE(err.find("--checkpoint-dir"), std::string::npos);
}

TEST(DecideCheckpoint, StandbyJobsCarryTheirCheckpointPromise) {
  const Policy p = standby_policy();
  SubmitView v;
  v.qos = "standby";
  v.requeue = Tristate::Yes;
  const SubmitDecision d = decide(v, p, 0);
  ASSERT_TRUE(d.accepted());
  ASSERT_TRUE(d.checkpoint);
  EXPECT_TRUE(d.checkpoint->requeue);
  v.checkpoint_signal = "NOPE";
  const SubmitDecision bad = decide(v, p, 0);
  EXPECT_FALSE(bad.accepted());
  EXPECT_NE(bad.reason.find("unknown signal 'NOPE'"), std::string::npos);
}

TEST(Notice, IsShellSourceable) {
  Notice n{NoticeReason::Preemption, 1700000060, true, SIGUSR1, 60, 42};
  const std::string text = format_notice(n);
  EXPECT_NE(text.find("SLURM_CHECKPOINT_REASON=preemption\n"), std::string::npos);
  EXPECT_NE(text.find("SLURM_CHECKPOINT_DEADLINE=1700000060\n"), std::string::npos);
  EXPECT_NE(text.find("SLURM_CHECKPOINT_REQUEUE=1\n"), std::string::npos);
  EXPECT_NE(text.find("SLURM_CHECKPOINT_SIGNAL=USR1\n"), std::string::npos);
}

TEST(Triggers, MapToReasons) {
  EXPECT_EQ(reason_for_trigger(kTriggerPreempt), NoticeReason::Preemption);
  EXPECT_EQ(reason_for_trigger(kTriggerTimeLimit), NoticeReason::TimeLimit);
  EXPECT_EQ(reason_for_trigger(kTriggerPause), NoticeReason::Pause);
  EXPECT_FALSE(reason_for_trigger(SIGUSR1));
}

TEST(SigCgt, ParsesTheMaskFromProcStatus) {
  const std::string status =
      "Name:\tpython3\nSigBlk:\t0000000000000000\nSigIgn:\t1000000001001000\n"
      "SigCgt:\t0000000180000200\nCapInh:\t0\n";
  const auto mask = parse_sigcgt(status);
  ASSERT_TRUE(mask);
  EXPECT_TRUE(catches(*mask, SIGUSR1));  // bit 9
  EXPECT_FALSE(catches(*mask, SIGUSR2));
  EXPECT_FALSE(catches(*mask, 0));
  EXPECT_FALSE(parse_sigcgt("Name:\tx\n"));
  EXPECT_FALSE(parse_sigcgt("SigCgt:\tzz\n"));
}

TEST(Delivery, ByDefaultEveryStepProcessThatHandlesTheSignal) {
  const StepFacts gpu{false, true}, cpu{false, false}, batch{true, false};
  const bool gpu_only = JobCheckpoint{}.gpu_steps_only;
  EXPECT_FALSE(gpu_only);
  EXPECT_TRUE(should_deliver({false, true, false}, cpu, gpu_only));  // a CPU-only step
  EXPECT_TRUE(should_deliver({false, true, false}, gpu, gpu_only));
  EXPECT_TRUE(should_deliver({false, true, false}, batch, gpu_only));  // a batch-step child
  EXPECT_TRUE(should_deliver({true, true, false}, batch, gpu_only));
  EXPECT_FALSE(should_deliver({false, false, false}, cpu, gpu_only));  // no handler: not killed
  EXPECT_FALSE(should_deliver({true, false, false}, batch, gpu_only));
  EXPECT_FALSE(should_deliver({false, true, true}, cpu, gpu_only));  // srun forwards to all
  // A promise without steps= (as an older job_submit wrote it) means every step too.
  const auto c = decode_checkpoint("signal=10,grace=60,lead=60,requeue=1");
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->gpu_steps_only);
}

TEST(Delivery, StepsGpuOnlyHandlersInTheBatchShellOrGpuSteps) {
  const StepFacts gpu{false, true}, cpu{false, false}, batch{true, false};
  EXPECT_TRUE(should_deliver({false, true, false}, gpu, true));
  EXPECT_FALSE(should_deliver({false, false, false}, gpu, true));  // no handler: not killed
  EXPECT_FALSE(should_deliver({false, true, false}, cpu, true));
  EXPECT_TRUE(should_deliver({false, true, false}, cpu, false));  // steps: all
  EXPECT_TRUE(should_deliver({true, true, false}, batch, true));
  EXPECT_FALSE(should_deliver({false, true, false}, batch, true));  // batch step w/o GPUs
  EXPECT_FALSE(should_deliver({false, true, true}, gpu, true));     // srun forwards to all
}

TEST(Triggers, OnlyTasksOfManagedJobsIgnoreThem) {
  EXPECT_FALSE(ignores_triggers({}));                   // an unmanaged job: default dispositions
  EXPECT_TRUE(ignores_triggers({true, false, false}));  // SLURM_CHECKPOINT_SIGNAL set
  EXPECT_TRUE(ignores_triggers({false, true, false}));  // --checkpoint-signal / -dir
  EXPECT_TRUE(ignores_triggers({false, false, true}));  // SLURM_PREEMPT_CHECKPOINT
  EXPECT_TRUE(ignores_triggers({true, true, true}));
}

TEST(Notes, SayWhatHappenedInOneLine) {
  JobCheckpoint c{SIGUSR1, 60, 60, true, true, ""};
  const std::string n = note_preempted(0, 17, "owner", "chem", c);
  EXPECT_EQ(n,
            "preempted at 1970-01-01T00:00:00Z by JobId=17 (qos owner, account chem): "
            "signal USR1, grace 60 s");
  EXPECT_EQ(note_exited_in_grace(0, 3, true, 2),
            "exited in time at 1970-01-01T00:00:00Z (exit 3), requeued as restart 2");
  EXPECT_EQ(note_killed_at_grace_end(0, false, 0),
            "killed at grace end 1970-01-01T00:00:00Z, cancelled (no --requeue)");
}

}  // namespace
}  // namespace sp
