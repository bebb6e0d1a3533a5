#include "checkpoint.hpp"

#include <gtest/gtest.h>

#include <csignal>

#include "decide.hpp"
#include "pause_mark.hpp"

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

TEST(CheckpointSignal, NegativeZeroAndHugeSecondsAreRefusedNotTakenForNone) {
  for (const char* bad :
       {"USR1@-1", "USR1@0", "USR1@86401", "USR1@99999999999999999999", "USR1@+5", "USR1@ 5"}) {
    std::string err;
    EXPECT_FALSE(parse_checkpoint_signal(bad, &err)) << bad;
    EXPECT_FALSE(err.empty()) << bad;
  }
  EXPECT_TRUE(parse_checkpoint_signal("USR1@86400", nullptr));
}

TEST(CheckpointSignal, OnlyCatchableUnreservedSignalsCanBeDelivered) {
  for (int s : {0, -1, 65, 200, SIGKILL, SIGSTOP, SIGCONT, 32, 33, kTriggerPreempt,
                kTriggerTimeLimit, kTriggerPause}) {
    EXPECT_FALSE(deliverable_signal(s)) << s;
  }
  for (int s : {SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2, 34, 60, 64}) {
    EXPECT_TRUE(deliverable_signal(s)) << s;
  }
}

TEST(CheckpointSignal, TheSignalOptionIsCheckedByTheSameFunction) {
  struct Case {
    int signo;
    int64_t seconds;
    const char* given;
    const char* why;
  };
  for (const Case& c : {Case{200, 5, "SIG200@5", "signal 200 does not exist"},
                        Case{SIGKILL, 5, "KILL@5", "KILL cannot be caught"},
                        Case{SIGSTOP, 5, "STOP@5", "STOP cannot be caught"},
                        Case{kTriggerPreempt, 5, "SIG61@5", "signal 61 is reserved"},
                        Case{SIGUSR1, 100000, "USR1@100000", "seconds must be between"}}) {
    std::string err;
    EXPECT_FALSE(check_checkpoint_signal(c.signo, c.seconds, "--signal", c.given, &err)) << c.given;
    EXPECT_EQ(err.rfind(std::string("invalid --signal=") + c.given + ": ", 0), 0u) << err;
    EXPECT_NE(err.find(c.why), std::string::npos) << err;
  }
  EXPECT_EQ(check_checkpoint_signal(SIGUSR2, 30, "--signal", "USR2@30", nullptr),
            (CheckpointSignalOption{SIGUSR2, 30}));
}

TEST(CheckpointSignal, EchoedValuesAreQuotedAndBounded) {
  std::string err;
  EXPECT_FALSE(parse_checkpoint_signal("USR1\nslurmctld: forged@5", &err));
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  EXPECT_NE(err.find("USR1\\nslurmctld"), std::string::npos) << err;
  const std::string huge = "USR1@" + std::string(120 * 1024, '9');
  EXPECT_FALSE(parse_checkpoint_signal(huge, &err));
  EXPECT_LT(err.size(), 1024u) << err.size();
  EXPECT_NE(err.find("(122885 bytes)"), std::string::npos);
  EXPECT_FALSE(valid_checkpoint_dir("/" + std::string(120 * 1024, 'd'), &err));
  EXPECT_LT(err.size(), 1024u);
  EXPECT_FALSE(valid_checkpoint_dir("relative\n/forged", &err));
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

TEST(CheckpointDir, MustBeAbsoluteWithoutDotDot) {
  std::string err;
  EXPECT_TRUE(valid_checkpoint_dir("/home/alice/ckpt", &err));
  EXPECT_FALSE(valid_checkpoint_dir("ckpt", &err));
  EXPECT_NE(err.find("absolute"), std::string::npos);
  EXPECT_FALSE(valid_checkpoint_dir("/home/alice/../bob", &err));
  EXPECT_FALSE(valid_checkpoint_dir("/home/..", &err));
  EXPECT_TRUE(valid_checkpoint_dir("/home/alice/..hidden", &err));
  for (const char* bad : {"/home/a\nb", "/home/a\tb", "/home/a\x1b[2J", "/home/a\x7f"}) {
    EXPECT_FALSE(valid_checkpoint_dir(bad, &err)) << bad;
    EXPECT_NE(err.find("control character"), std::string::npos) << err;
  }
  EXPECT_FALSE(valid_checkpoint_dir(std::string("/home/a\0b", 9), &err));
}

TEST(CheckpointEncoding, RoundTripsAndRejectsGarbage) {
  JobCheckpoint c{SIGUSR2, 45, 90, true, false, ""};
  EXPECT_EQ(decode_checkpoint(encode_checkpoint(c)), c);
  EXPECT_FALSE(decode_checkpoint("grace=5"));
  EXPECT_FALSE(decode_checkpoint("signal=99"));
  EXPECT_FALSE(decode_checkpoint("signal=10,grace=-1"));
  EXPECT_FALSE(decode_checkpoint("signal=10,steps=some"));
  EXPECT_TRUE(decode_checkpoint("signal=10,future=7"));
  EXPECT_TRUE(decode_checkpoint("signal=10,future=some text"));
}

// Every number the codec reads is bounded, so a promise that did get through (an older
// version, a forged entry) can overflow nothing in the watcher or the node side.
TEST(CheckpointEncoding, BoundsEveryNumberItReads) {
  const auto ok = [](const std::string& rest) { return decode_checkpoint("signal=10" + rest); };
  EXPECT_TRUE(ok(",grace=86400,lead=86400,requeue=1"));
  EXPECT_FALSE(ok(",grace=86401"));
  EXPECT_FALSE(ok(",grace=9223372036854775807"));
  EXPECT_FALSE(ok(",grace=99999999999999999999999"));
  EXPECT_FALSE(ok(",grace=-5"));
  EXPECT_FALSE(ok(",lead=86401"));
  EXPECT_FALSE(ok(",lead=-1"));
  EXPECT_FALSE(ok(",lead=1e9"));
  EXPECT_FALSE(ok(",requeue=2"));
  EXPECT_FALSE(ok(",requeue=-1"));
  EXPECT_FALSE(ok(",grace=5,grace=6"));  // each key once: no two readings of one text
  EXPECT_FALSE(decode_checkpoint("signal=10,signal=12"));
  EXPECT_FALSE(ok(",steps=gpu,steps=all"));
  EXPECT_FALSE(ok(",grace="));
  EXPECT_FALSE(ok(",,grace=5"));
  for (const char* signal : {"0", "65", "200", "9", "19", "18", "32", "33", "61", "62", "63", "-10",
                             "USR1", "4294967306"}) {
    EXPECT_FALSE(decode_checkpoint(std::string("signal=") + signal)) << signal;
  }
  EXPECT_FALSE(ok(",dir=/" + std::string(kMaxEncodedCheckpoint, 'd')));
  const JobCheckpoint longest{SIGUSR1, kMaxGraceS, kMaxCheckpointSeconds,
                              true,    false,      "/" + std::string(4094, 'd')};
  EXPECT_EQ(decode_checkpoint(encode_checkpoint(longest)), longest);
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

TEST(ResolveCheckpoint, ASignalThePromiseCannotDeliverIsRefusedOnPreemptibleJobs) {
  const Policy p = standby_policy();
  for (int bad : {200, SIGKILL, SIGSTOP, kTriggerPreempt, kTriggerTimeLimit, kTriggerPause}) {
    std::string err;
    CheckpointRequest req;
    req.user_signal = bad;
    req.user_seconds = 5;
    EXPECT_FALSE(resolve_checkpoint(req, p, p.find_qos("standby"), &err)) << bad;
    EXPECT_EQ(err.rfind("invalid --signal=", 0), 0u) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
    // Even beside a --checkpoint-signal: the promise replaces it, so it must be one it could
    // have delivered.
    req.signal_option = "USR1";
    err.clear();
    EXPECT_FALSE(resolve_checkpoint(req, p, p.find_qos("standby"), &err)) << bad;
    EXPECT_FALSE(err.empty());
    // Left to Slurm where no promise replaces it.
    req.signal_option = "";
    err.clear();
    EXPECT_FALSE(resolve_checkpoint(req, p, p.find_qos("normal"), &err)) << bad;
    EXPECT_TRUE(err.empty()) << err;
  }
}

TEST(ResolveCheckpoint, ADirOnANonPreemptibleJobTakesOverItsSignalForTheTimeLimit) {
  const Policy p = standby_policy();
  std::string err;
  CheckpointRequest req;
  req.dir_option = "/ckpt";
  req.user_signal = SIGUSR2;
  req.user_seconds = 30;
  const auto c = resolve_checkpoint(req, p, p.find_qos("normal"), &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->signal, SIGUSR2);
  EXPECT_EQ(c->grace_s, 0);
  EXPECT_EQ(c->lead_s, 30);
  req.user_signal = SIGKILL;
  EXPECT_FALSE(resolve_checkpoint(req, p, p.find_qos("normal"), &err));
  EXPECT_NE(err.find("KILL cannot be caught"), std::string::npos) << err;
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

Notice a_notice(NoticeReason reason, int64_t grace_s, const std::string& paused_by) {
  Notice n;
  n.reason = reason;
  n.deadline = 1700000060;
  n.requeue = true;
  n.signal = SIGUSR1;
  n.grace_s = grace_s;
  n.job_id = 42;
  n.paused_by = paused_by;
  return n;
}

TEST(Notice, IsShellSourceable) {
  Notice n = a_notice(NoticeReason::Preemption, 60, "");
  const std::string text = format_notice(n);
  EXPECT_NE(text.find("SLURM_CHECKPOINT_REASON=preemption\n"), std::string::npos);
  EXPECT_NE(text.find("SLURM_CHECKPOINT_DEADLINE=1700000060\n"), std::string::npos);
  EXPECT_NE(text.find("SLURM_CHECKPOINT_REQUEUE=1\n"), std::string::npos);
  EXPECT_NE(text.find("SLURM_CHECKPOINT_SIGNAL=USR1\n"), std::string::npos);
  EXPECT_NE(text.find("SLURM_CHECKPOINT_RESTART_COUNT=0\n"), std::string::npos);
  n.restart_count = 3;
  EXPECT_NE(format_notice(n).find("SLURM_CHECKPOINT_RESTART_COUNT=3\n"), std::string::npos);
}

TEST(Notice, APauseNamesWhoPausedWhenItIsAPlainUserName) {
  Notice n = a_notice(NoticeReason::Pause, 7, "erin");
  std::string text = format_notice(n);
  EXPECT_NE(text.find("SLURM_CHECKPOINT_REASON=pause\n"), std::string::npos);
  EXPECT_NE(text.find("SLURM_CHECKPOINT_PAUSED_BY=erin\n"), std::string::npos);
  EXPECT_EQ(text.find("PAUSED_BY_ADMIN"), std::string::npos);
  n.paused_by = "root";
  n.paused_by_admin = true;
  EXPECT_NE(format_notice(n).find("SLURM_CHECKPOINT_PAUSED_BY_ADMIN=1\n"), std::string::npos);
  n.paused_by = "x$(id)";  // the notice is sourced by shells: nothing but a plain name
  EXPECT_EQ(format_notice(n).find("PAUSED_BY"), std::string::npos);
  n.paused_by = "erin";
  n.reason = NoticeReason::Preemption;  // only a pause has someone who paused
  EXPECT_EQ(format_notice(n).find("PAUSED_BY"), std::string::npos);
}

TEST(Triggers, MapToReasons) {
  EXPECT_EQ(reason_for_trigger(kTriggerPreempt), NoticeReason::Preemption);
  EXPECT_EQ(reason_for_trigger(kTriggerTimeLimit), NoticeReason::TimeLimit);
  EXPECT_EQ(reason_for_trigger(kTriggerPause), NoticeReason::Pause);
  EXPECT_FALSE(reason_for_trigger(SIGUSR1));
}

// A step's sentinel acts on a preemption's or a pause's trigger once (Slurm and the watcher may
// both send the preemption one), on a time-limit trigger each time: the watcher sends another
// only for a limit raised after the first.
TEST(Triggers, OnlyTheTimeLimitOneIsActedOnAgain) {
  EXPECT_TRUE(acts_on_trigger(NoticeReason::Preemption, false));
  EXPECT_FALSE(acts_on_trigger(NoticeReason::Preemption, true));
  EXPECT_TRUE(acts_on_trigger(NoticeReason::Pause, false));
  EXPECT_FALSE(acts_on_trigger(NoticeReason::Pause, true));
  EXPECT_TRUE(acts_on_trigger(NoticeReason::TimeLimit, false));
  EXPECT_TRUE(acts_on_trigger(NoticeReason::TimeLimit, true));
}

// The time-limit trigger: the first acted on; another only for a later end (a raised limit),
// never for the same end twice (the watcher lost its record and sent it again); acted on when
// slurmctld could not say the end. The deadline is the end slurmctld shows: a trigger that
// comes late (a limit raised within the lead) says the real end.
TEST(Triggers, ATimeLimitNoticeComesForEachLaterEnd) {
  constexpr int64_t kNow = 1'000'000;
  TimeLimitNotice n = time_limit_notice(kNow + 60, 0, kNow, 60);
  EXPECT_TRUE(n.act);
  EXPECT_EQ(n.deadline, kNow + 60);
  EXPECT_FALSE(time_limit_notice(kNow + 60, kNow + 60, kNow + 5, 60).act);
  EXPECT_FALSE(time_limit_notice(kNow + 50, kNow + 60, kNow + 5, 60).act);
  n = time_limit_notice(kNow + 120, kNow + 60, kNow + 60, 60);
  EXPECT_TRUE(n.act);
  EXPECT_EQ(n.deadline, kNow + 120);
  n = time_limit_notice(kNow + 70, kNow + 60, kNow + 55, 60);  // raised within the lead
  EXPECT_TRUE(n.act);
  EXPECT_EQ(n.deadline, kNow + 70);
  n = time_limit_notice(0, kNow + 60, kNow + 10, 60);  // slurmctld did not answer
  EXPECT_TRUE(n.act);
  EXPECT_EQ(n.deadline, kNow + 70);
  n = time_limit_notice(0, 0, kNow, 30);
  EXPECT_TRUE(n.act);
  EXPECT_EQ(n.deadline, kNow + 30);
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

// A worker that left its step's process tree is found by the mark the SPANK plugin puts in its
// step's environment: this job, this step (batch or a number), this run; nothing else says so.
TEST(Sentinel, AProcessOfTheRunAndStepIsKnownByItsMark) {
  using namespace std::string_literals;
  EXPECT_EQ(step_mark(42, std::nullopt, 0), "42.batch.0");
  EXPECT_EQ(step_mark(42, 3, 2), "42.3.2");
  const std::string mark = step_mark(42, 3, 2);
  const std::string env =
      "PATH=/bin\0SLURM_JOB_ID=42\0SLURM_STEP_ID=0\0SLURM_PREEMPT_STEP_MARK=42.3.2\0"s;
  EXPECT_TRUE(environ_has_mark(env, mark));
  EXPECT_FALSE(environ_has_mark(env, step_mark(42, std::nullopt, 2)));  // the batch step's
  EXPECT_FALSE(environ_has_mark(env, step_mark(42, 3, 1)));             // an earlier run's
  EXPECT_FALSE(environ_has_mark(env, step_mark(4, 3, 2)));              // another job's
  EXPECT_FALSE(environ_has_mark(env, "3.2"));                           // a suffix is not it
  EXPECT_FALSE(environ_has_mark("SLURM_PREEMPT_STEP_MARKX=42.3.2\0"s, mark));
  EXPECT_FALSE(environ_has_mark("X_SLURM_PREEMPT_STEP_MARK=42.3.2\0"s, mark));
  EXPECT_FALSE(environ_has_mark("SLURM_PREEMPT_STEP_MARK=142.3.2\0"s, mark));
  EXPECT_TRUE(environ_has_mark("SLURM_PREEMPT_STEP_MARK=42.3.2"s, mark));  // no final NUL
  EXPECT_FALSE(environ_has_mark("", mark));
}

TEST(Sentinel, OnlyALiveSentinelWithItsBusyNameIsCompletingANotice) {
  EXPECT_TRUE(sentinel_completing_notice("4242 (ckpt-sentinel+) S 17 4242 4242 0 -1 4194560 0"));
  EXPECT_TRUE(sentinel_completing_notice("4242 (ckpt-sentinel+) R 17"));
  EXPECT_FALSE(sentinel_completing_notice("4242 (ckpt-sentinel) S 17"));  // idle
  EXPECT_FALSE(sentinel_completing_notice("4243 (python3) S 17"));        // a task
  EXPECT_FALSE(sentinel_completing_notice("4243 (ckpt-sentinel+x) S 17"));
  // Killed while busy (the step's SIGTERM, scancel): a zombie until slurmstepd reaps it, and
  // slurmstepd reaps nothing while it waits.
  EXPECT_FALSE(sentinel_completing_notice("4242 (ckpt-sentinel+) Z 17"));
  EXPECT_FALSE(sentinel_completing_notice("4242 (ckpt-sentinel+) X 17"));
  // A name that holds ") " is read up to the last ')'.
  EXPECT_FALSE(sentinel_completing_notice("4244 (a) (ckpt-sentinel+) S 17"));
  EXPECT_FALSE(sentinel_completing_notice(""));
  EXPECT_FALSE(sentinel_completing_notice("4242 (ckpt-sentinel+)"));  // cut short
  EXPECT_FALSE(sentinel_completing_notice("4242 ckpt-sentinel+) S"));
  // Both names fit the kernel's 15 characters, and the busy one starts like the idle one, so
  // `ps` and pgrep ckpt-sentinel find the sentinel in either phase.
  EXPECT_LE(kSentinelBusyComm.size(), 15U);
  EXPECT_TRUE(kSentinelBusyComm.starts_with(kSentinelComm));
  EXPECT_GT(kStepEndWaitForNoticeMs, kPreemptorLookupMs);
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

namespace sp {
namespace {

TEST(Notice, APreemptionNamesItsPreemptorAndWhyWhenKnown) {
  Notice n = a_notice(NoticeReason::Preemption, 60, "");
  EXPECT_EQ(format_notice(n).find("PREEMPT"), std::string::npos);  // not known in time
  n.preempted_by = 77;
  n.preemptor_qos = "train";
  n.preemptor_account = "team-a";
  n.preempt_reason = "quota reclaim";
  const std::string text = format_notice(n);
  EXPECT_NE(text.find("SLURM_CHECKPOINT_PREEMPTED_BY=77\n"), std::string::npos) << text;
  EXPECT_NE(text.find("SLURM_CHECKPOINT_PREEMPTOR_QOS=train\n"), std::string::npos) << text;
  EXPECT_NE(text.find("SLURM_CHECKPOINT_PREEMPTOR_ACCOUNT=team-a\n"), std::string::npos) << text;
  EXPECT_NE(text.find("SLURM_CHECKPOINT_PREEMPT_REASON=quota-reclaim\n"), std::string::npos)
      << text;
  n.preemptor_account = "a b;$(id)";  // sourced by shells: only plain names
  EXPECT_EQ(format_notice(n).find("PREEMPTOR_ACCOUNT"), std::string::npos);
  n.reason = NoticeReason::Pause;  // a pause has no preemptor
  EXPECT_EQ(format_notice(n).find("PREEMPTED_BY"), std::string::npos);
}

TEST(PreemptedNote, ReadsBackWhatTheWriterWritesAndNothingElse) {
  JobCheckpoint c;
  c.signal = SIGUSR1;
  c.grace_s = 30;
  const std::string note = note_preempted(1795520340, 77, "owner", "chem", c, "owner reclaim");
  const auto p = parse_note_preempted(note);
  ASSERT_TRUE(p) << note;
  EXPECT_EQ(p->at, 1795520340);
  EXPECT_EQ(p->by_job, 77U);
  EXPECT_EQ(p->qos, "owner");
  EXPECT_EQ(p->account, "chem");
  EXPECT_EQ(p->reason, "owner reclaim");
  EXPECT_EQ(p->signal, SIGUSR1);
  EXPECT_EQ(p->grace_s, 30);
  EXPECT_FALSE(parse_note_preempted(note + "x"));
  EXPECT_FALSE(parse_note_preempted(note.substr(0, note.size() - 3)));
  EXPECT_FALSE(parse_note_preempted("preempted at soon by a job: signal USR1, grace 3 s"));
  // shown_pause finds the story's last preemption in what scontrol shows
  const std::string shown =
      "JobId=5 JobName=x\n   StartTime=1 EndTime=2 Deadline=N/A\n"
      "   AdminComment={\"jobstats\":1} slurm-preempt: " +
      note_preempted(1795520000, 70, "owner", "chem", c) + "; slurm-preempt: " + note + ";\n";
  const ShownPause sp = shown_pause(shown);
  ASSERT_TRUE(sp.preemption);
  EXPECT_EQ(sp.preemption->by_job, 77U);
  EXPECT_FALSE(shown_pause("JobId=5\n   AdminComment=(null)\n").preemption);
}

}  // namespace
}  // namespace sp
