#include "decide.hpp"

#include <gtest/gtest.h>

#include "policy_loader.hpp"

namespace sp {
namespace {

constexpr int64_t kNow = 1'700'000'000;

class Decide : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = load_policy_file(std::string(SP_SOURCE_DIR) + "/etc/preempt.yaml");
    ASSERT_EQ(error_of(r), nullptr) << error_of(r)->str();
    policy = policy_of(r);
  }
  SubmitDecision run(const SubmitView& v) const { return decide(v, *policy, kNow); }
  std::shared_ptr<const Policy> policy;
};

TEST_F(Decide, APublicNormalJobIsAcceptedUnchanged) {
  for (const char* qos : {"", "normal", "owner"}) {
    SubmitView job;
    job.qos = qos;
    job.account = "public";
    job.time_limit_min = 60;
    const SubmitDecision d = run(job);
    EXPECT_TRUE(d.accepted()) << qos << ": " << d.reason;
    EXPECT_FALSE(d.changes()) << qos;
  }
}

TEST_F(Decide, AQosThePolicyDoesNotGovernIsLeftToSlurm) {
  SubmitView job;
  job.qos = "debug";
  job.account = "chem";
  job.time_limit_min = kTimeUnlimited;
  job.partition = "chem";
  const SubmitDecision d = run(job);
  EXPECT_TRUE(d.accepted());
  EXPECT_FALSE(d.changes());
}

TEST_F(Decide, StandbyWithoutRequeueIsMadeExplicitlyNotRequeued) {
  SubmitView job;
  job.qos = "standby";
  job.partition = "standby";
  const SubmitDecision d = run(job);
  ASSERT_TRUE(d.accepted()) << d.reason;
  ASSERT_TRUE(d.set_requeue.has_value());
  EXPECT_FALSE(*d.set_requeue);
  EXPECT_FALSE(d.set_qos.has_value());
  EXPECT_FALSE(d.set_partition.has_value());
}

TEST_F(Decide, StandbyWithAnExplicitRequeueChoiceIsLeftAlone) {
  for (Tristate t : {Tristate::Yes, Tristate::No}) {
    SubmitView job;
    job.qos = "standby";
    job.partition = "standby";
    job.requeue = t;
    const SubmitDecision d = run(job);
    EXPECT_TRUE(d.accepted());
    EXPECT_FALSE(d.set_qos || d.set_partition || d.set_requeue);
    ASSERT_TRUE(d.checkpoint);  // the only addition: the job's checkpoint promise
    EXPECT_EQ(d.checkpoint->requeue, t == Tristate::Yes);
  }
}

TEST_F(Decide, RequeueModesOfThePolicy) {
  auto with_mode = [](const char* mode) {
    auto r = load_policy_text(
        std::string("qos:\n  standby:\n    preemptible: true\n    requeue: ") + mode + "\n",
        "t.yaml");
    EXPECT_EQ(error_of(r), nullptr);
    return policy_of(r);
  };
  SubmitView job;
  job.qos = "standby";
  job.partition = "standby";

  auto dflt = with_mode("default");
  EXPECT_EQ(decide(job, *dflt, kNow).set_requeue, true);
  job.requeue = Tristate::No;
  EXPECT_FALSE(decide(job, *dflt, kNow).set_requeue);

  auto always = with_mode("always");
  SubmitDecision d = decide(job, *always, kNow);  // --no-requeue
  EXPECT_FALSE(d.accepted());
  EXPECT_EQ(d.kind, SubmitDecision::RejectKind::Qos);
  EXPECT_NE(d.reason.find("remove --no-requeue"), std::string::npos) << d.reason;

  auto never = with_mode("never");
  job.requeue = Tristate::Yes;
  d = decide(job, *never, kNow);
  EXPECT_FALSE(d.accepted());
  EXPECT_NE(d.reason.find("remove --requeue"), std::string::npos) << d.reason;
  job.requeue = Tristate::Unset;
  EXPECT_EQ(decide(job, *never, kNow).set_requeue, false);
}

TEST_F(Decide, StandbyInAnOwnersPartitionIsRejectedWithWhatToDoInstead) {
  SubmitView job;
  job.qos = "standby";
  job.requeue = Tristate::Yes;
  for (const char* part : {"chem", "public,bio"}) {
    job.partition = part;
    const SubmitDecision d = run(job);
    EXPECT_FALSE(d.accepted()) << part;
    EXPECT_EQ(d.kind, SubmitDecision::RejectKind::Partition);
    EXPECT_NE(d.reason.find("--partition=standby or without --partition"), std::string::npos)
        << d.reason;
    EXPECT_NE(d.reason.find("cannot run in partition " +
                            std::string(part == std::string("chem") ? "chem" : "bio") + ", which"),
              std::string::npos)
        << "names only the owned partition: " << d.reason;
    EXPECT_EQ(d.reason.find('\n'), std::string::npos) << "one line";
  }
  job.partition = "standby";
  EXPECT_TRUE(run(job).accepted());
}

TEST_F(Decide, ANormalJobOverTheNormalWalltimeIsRejectedAndPointedToStandby) {
  SubmitView job;
  job.qos = "normal";
  job.time_limit_min = 3 * 24 * 60;
  const SubmitDecision d = run(job);
  EXPECT_FALSE(d.accepted());
  EXPECT_EQ(d.kind, SubmitDecision::RejectKind::TimeLimit);
  EXPECT_EQ(d.reason,
            "time limit 3-00:00:00 exceeds qos normal's maximum of 2-00:00:00; ask for "
            "--time=2-00:00:00 or less, or submit with --qos=standby (preemptible, up to "
            "7-00:00:00)");
  job.qos = "";  // the default QOS is governed by the normal rule
  EXPECT_FALSE(run(job).accepted());
  job.qos = "standby";
  job.requeue = Tristate::Yes;
  EXPECT_TRUE(run(job).accepted());
}

TEST_F(Decide, StandbyHasItsOwnHigherWalltimeLimit) {
  SubmitView job;
  job.qos = "standby";
  job.requeue = Tristate::Yes;
  job.time_limit_min = 7 * 24 * 60;
  EXPECT_TRUE(run(job).accepted());
  job.time_limit_min = 7 * 24 * 60 + 1;
  const SubmitDecision d = run(job);
  EXPECT_FALSE(d.accepted());
  EXPECT_EQ(d.reason.find("--qos="), std::string::npos) << "no other qos to suggest";
  job.time_limit_min = kTimeUnlimited;
  EXPECT_NE(run(job).reason.find("time limit UNLIMITED exceeds"), std::string::npos);
}

}  // namespace
}  // namespace sp

namespace sp {
namespace {

TEST(DecideAccess, AUserWithoutTheQosIsToldHowToGetIt) {
  const Policy policy = default_policy();
  SubmitView job;
  job.qos = "standby";
  job.requeue = Tristate::Yes;
  job.qos_allowed = Tristate::No;
  job.user_name = "erin";
  job.assoc_account = "public";
  const SubmitDecision d = decide(job, policy, 0);
  EXPECT_FALSE(d.accepted());
  EXPECT_EQ(d.kind, SubmitDecision::RejectKind::Qos);
  EXPECT_EQ(d.reason,
            "user erin (account public) may not use qos standby; ask your administrator to "
            "grant it (sacctmgr modify user erin set qos+=standby) or submit without "
            "--qos=standby");
  job.qos_allowed = Tristate::Unset;  // unknown: Slurm decides
  EXPECT_TRUE(decide(job, policy, 0).accepted());
}

}  // namespace
}  // namespace sp

namespace sp {
namespace {

class Routing : public Decide {};

TEST_F(Routing, AnOwnersJobWithoutPartitionOrQosGoesToItsNodesAsOwner) {
  SubmitView job;
  job.account = "chem";
  const SubmitDecision d = run(job);
  ASSERT_TRUE(d.accepted()) << d.reason;
  EXPECT_EQ(d.set_qos, "owner");
  EXPECT_EQ(d.set_partition, "chem");
  EXPECT_FALSE(d.set_requeue.has_value());
}

TEST_F(Routing, AnOwnersNormalJobGoesToItsNodesWithItsQos) {
  SubmitView job;
  job.account = "bio";
  job.qos = "normal";
  const SubmitDecision d = run(job);
  EXPECT_FALSE(d.set_qos.has_value());
  EXPECT_EQ(d.set_partition, "bio");
}

TEST_F(Routing, AnOwnerNamingAPartitionIsLeftAlone) {
  SubmitView job;
  job.account = "chem";
  job.partition = "public";
  const SubmitDecision d = run(job);
  EXPECT_TRUE(d.accepted());
  EXPECT_FALSE(d.changes());
}

TEST_F(Routing, APreemptibleJobWithoutPartitionTriesPublicThenStandby) {
  for (const char* account : {"public", "chem", ""}) {
    SubmitView job;
    job.account = account;
    job.qos = "standby";
    job.requeue = Tristate::Yes;
    const SubmitDecision d = run(job);
    ASSERT_TRUE(d.accepted()) << d.reason;
    EXPECT_EQ(d.set_partition, "public,standby") << account;
    EXPECT_FALSE(d.set_qos.has_value());
  }
}

TEST_F(Routing, APublicJobWithoutQosOrPartitionIsLeftToTheDefaultPartition) {
  SubmitView job;
  job.account = "public";
  EXPECT_FALSE(run(job).changes());
}

TEST_F(Routing, AnotherAccountNamingAnOwnersPartitionIsToldToUseStandby) {
  SubmitView job;
  job.account = "public";
  job.partition = "chem";
  SubmitDecision d = run(job);
  EXPECT_FALSE(d.accepted());
  EXPECT_EQ(d.kind, SubmitDecision::RejectKind::Partition);
  EXPECT_EQ(d.reason,
            "partition chem holds chem's own nodes; other accounts may use them only while idle, "
            "as preemptible jobs: submit with --qos=standby and without --partition");
  job.account = "bio";
  EXPECT_FALSE(run(job).accepted());
  job.account = "chem";  // the owner itself
  EXPECT_TRUE(run(job).accepted());
  job.account = "";  // account unknown here: Slurm's AllowAccounts decides
  EXPECT_TRUE(run(job).accepted());
}

TEST_F(Routing, TheStandbyPartitionTakesOnlyPreemptibleJobs) {
  SubmitView job;
  job.account = "public";
  job.partition = "standby";
  SubmitDecision d = run(job);
  EXPECT_FALSE(d.accepted());
  EXPECT_EQ(d.reason,
            "partition standby spans owned nodes and takes only preemptible jobs: add "
            "--qos=standby, or use --partition=public");
  job.partition = "public,standby";
  EXPECT_FALSE(run(job).accepted());
  job.qos = "standby";
  job.requeue = Tristate::No;
  EXPECT_TRUE(run(job).accepted());
}

TEST(RoutingPolicy, AnOwnerGroupMayNameItsQosButNotAPreemptibleOne) {
  auto r = load_policy_text(
      "owners:\n  chem:\n    partitions: [chem, chemgpu]\n    nodes: n[3-4]\n    qos: normal\n",
      "t.yaml");
  ASSERT_EQ(error_of(r), nullptr) << error_of(r)->str();
  SubmitView job;
  job.account = "chem";
  const SubmitDecision d = decide(job, *policy_of(r), 0);
  EXPECT_EQ(d.set_qos, "normal");
  EXPECT_EQ(d.set_partition, "chem,chemgpu");
  auto bad = load_policy_text(
      "owners:\n  chem:\n    partitions: [chem]\n    nodes: n3\n    qos: standby\n", "t.yaml");
  ASSERT_NE(error_of(bad), nullptr);
  EXPECT_NE(error_of(bad)->message.find("is preemptible"), std::string::npos);
}

}  // namespace
}  // namespace sp

namespace sp {
namespace {

// Jobs without --qos run with their association's default QOS (issue 12, item 7): decide()
// judges them by that QOS' rule, and by "normal" only when the default is unknown.
class DefaultQos : public Decide {};

TEST_F(DefaultQos, APreemptibleDefaultGetsTheFullPreemptibleTreatment) {
  SubmitView job;
  job.account = "public";
  job.default_qos = "standby";
  const SubmitDecision d = run(job);
  ASSERT_TRUE(d.accepted()) << d.reason;
  EXPECT_EQ(d.set_partition, "public,standby");
  EXPECT_EQ(d.set_requeue, false);  // requeue: user, and the user said nothing
  ASSERT_TRUE(d.checkpoint);
  EXPECT_EQ(d.checkpoint->grace_s, 60);
  EXPECT_FALSE(d.set_qos.has_value());  // Slurm gives it the same default
}

TEST_F(DefaultQos, APreemptibleDefaultIsKeptOutOfOwnersPartitionsAndSaysWhy) {
  SubmitView job;
  job.account = "public";
  job.default_qos = "standby";
  job.partition = "chem";
  const SubmitDecision d = run(job);
  EXPECT_FALSE(d.accepted());
  EXPECT_EQ(d.reason.rfind("qos standby (your default) jobs are preemptible and cannot run in "
                           "partition chem",
                           0),
            0u)
      << d.reason;
  // The standby partition takes such a job, though it never named --qos.
  job.partition = "standby";
  EXPECT_TRUE(run(job).accepted());
}

TEST_F(DefaultQos, AWalltimeOverTheDefaultQosMaximumIsJudgedByThatQos) {
  SubmitView job;
  job.account = "public";
  job.time_limit_min = 3 * 24 * 60;  // over normal's 2 days, within standby's 7
  job.default_qos = "standby";
  EXPECT_TRUE(run(job).accepted());
  job.default_qos = "normal";
  EXPECT_FALSE(run(job).accepted());
  job.default_qos = "";  // unknown: Slurm's last resort, "normal"
  EXPECT_FALSE(run(job).accepted());
}

TEST_F(DefaultQos, AnUngovernedDefaultIsLeftToSlurm) {
  SubmitView job;
  job.account = "public";
  job.default_qos = "debug";
  job.time_limit_min = kTimeUnlimited;
  const SubmitDecision d = run(job);
  EXPECT_TRUE(d.accepted());
  EXPECT_FALSE(d.changes());
}

TEST_F(DefaultQos, AnOwnersJobWithoutQosStillRunsAsItsGroupsQos) {
  SubmitView job;
  job.account = "chem";
  job.default_qos = "standby";
  const SubmitDecision d = run(job);
  ASSERT_TRUE(d.accepted()) << d.reason;
  EXPECT_EQ(d.set_qos, "owner");
  EXPECT_EQ(d.set_partition, "chem");
}

TEST_F(DefaultQos, AnExplicitQosWinsOverTheDefault) {
  SubmitView job;
  job.account = "public";
  job.qos = "normal";
  job.default_qos = "standby";
  EXPECT_FALSE(run(job).changes());
}

// Slurm matches QOS and account names without regard to case (issue 12, item 10).
class NameCase : public Decide {};

TEST_F(NameCase, AQosInAnotherCaseGetsTheFullTreatment) {
  for (const char* qos : {"Standby", "STANDBY", "standby"}) {
    SubmitView job;
    job.qos = qos;
    const SubmitDecision d = run(job);
    ASSERT_TRUE(d.accepted()) << qos << ": " << d.reason;
    EXPECT_EQ(d.set_partition, "public,standby") << qos;
    EXPECT_EQ(d.set_requeue, false) << qos;
    EXPECT_TRUE(d.checkpoint) << qos;
    job.partition = "chem";
    EXPECT_FALSE(run(job).accepted()) << qos;
  }
}

TEST_F(NameCase, AnAccountInAnotherCaseIsTheOwner) {
  SubmitView job;
  job.account = "CHEM";
  const SubmitDecision d = run(job);
  EXPECT_EQ(d.set_qos, "owner");
  EXPECT_EQ(d.set_partition, "chem");
  job.partition = "chem";
  job.qos = "normal";
  EXPECT_TRUE(run(job).accepted()) << run(job).reason;  // the owner, not another account
}

TEST_F(NameCase, PartitionNamesAreExactAsInSlurm) {
  // Slurm refuses "-p Chem" itself (list_find_part compares exactly): it is not chem.
  SubmitView job;
  job.account = "public";
  job.partition = "Chem";
  EXPECT_TRUE(run(job).accepted());
  job.partition = "chem";
  EXPECT_FALSE(run(job).accepted());
}

TEST(RefusalHints, NameThePolicysPreemptibleQos) {
  auto r = load_policy_text(
      "qos:\n  scavenger:\n    preemptible: true\n  lowprio:\n    preemptible: true\n"
      "  normal:\n    preempts: [scavenger, lowprio]\n"
      "owners:\n  chem:\n    partitions: [chem]\n    nodes: n3\n",
      "t.yaml");
  ASSERT_EQ(error_of(r), nullptr) << error_of(r)->str();
  const Policy& policy = *policy_of(r);
  SubmitView job;
  job.account = "public";
  job.partition = "chem";
  SubmitDecision d = decide(job, policy, 0);
  EXPECT_EQ(d.reason,
            "partition chem holds chem's own nodes; other accounts may use them only while idle, "
            "as preemptible jobs: submit with --qos=scavenger or --qos=lowprio and without "
            "--partition");
  job.partition = "standby";
  d = decide(job, policy, 0);
  EXPECT_EQ(d.reason,
            "partition standby spans owned nodes and takes only preemptible jobs: add "
            "--qos=scavenger or --qos=lowprio, or use --partition=public");
  EXPECT_EQ(d.reason.find("--qos=standby"), std::string::npos);

  auto none = load_policy_text(
      "qos:\n  normal: {}\nowners:\n  chem:\n    partitions: [chem]\n    nodes: n3\n", "t.yaml");
  ASSERT_EQ(error_of(none), nullptr) << error_of(none)->str();
  job.partition = "chem";
  EXPECT_EQ(decide(job, *policy_of(none), 0).reason,
            "partition chem holds chem's own nodes; submit without --partition");
  job.partition = "standby";
  EXPECT_EQ(decide(job, *policy_of(none), 0).reason,
            "partition standby spans owned nodes and takes only preemptible jobs: use "
            "--partition=public");
}

TEST(RefusalHints, EchoedNamesAreQuoted) {
  const Policy policy = default_policy();
  SubmitView job;
  job.qos = "standby";
  job.qos_allowed = Tristate::No;
  job.user_name = "erin\nslurmctld: forged";
  job.assoc_account = "public";
  const SubmitDecision d = decide(job, policy, 0);
  EXPECT_FALSE(d.accepted());
  EXPECT_EQ(d.reason.find('\n'), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("erin\\nslurmctld"), std::string::npos) << d.reason;
}

TEST(DecideSignal, ASignalThePromiseCannotDeliverIsRefusedAtSubmission) {
  const Policy policy = default_policy();
  SubmitView job;
  job.qos = "standby";
  job.requeue = Tristate::Yes;
  job.warn_signal = 200;
  job.warn_seconds = 5;
  SubmitDecision d = decide(job, policy, 0);
  EXPECT_FALSE(d.accepted());
  EXPECT_EQ(d.reason.rfind("invalid --signal=SIG200@5: signal 200 does not exist", 0), 0u)
      << d.reason;
  job.warn_signal = SIGUSR2;
  d = decide(job, policy, 0);
  ASSERT_TRUE(d.accepted()) << d.reason;
  EXPECT_EQ(d.checkpoint->signal, SIGUSR2);
  EXPECT_EQ(d.checkpoint->grace_s, 5);
}

}  // namespace
}  // namespace sp

namespace sp {
namespace {

class InteractivePromise : public Decide {
 protected:
  // A standby salloc/srun allocation; `deliverable`: PriorityType is priority/fairshare.
  static SubmitView allocation(bool deliverable) {
    SubmitView job;
    job.account = "public";
    job.qos = "standby";
    job.interactive = true;
    job.interactive_promise = deliverable;
    return job;
  }
};

TEST_F(InteractivePromise, AnAllocationGetsItsPromiseWhenTheControllerCanHandItOver) {
  const SubmitDecision d = run(allocation(true));
  ASSERT_TRUE(d.accepted()) << d.reason;
  EXPECT_TRUE(d.checkpoint);
}

TEST_F(InteractivePromise, WithoutPriorityFairshareAnAllocationGetsNoneAndStockBehaviour) {
  SubmitView job = allocation(false);
  const SubmitDecision d = run(job);
  ASSERT_TRUE(d.accepted()) << d.reason;
  EXPECT_FALSE(d.checkpoint);                    // no private trigger its tasks would not ignore
  EXPECT_EQ(d.set_partition, "public,standby");  // the rest of the standby treatment stays
  job.interactive = false;  // a batch job carries its promise in its own environment
  EXPECT_TRUE(run(job).checkpoint);
}

TEST_F(InteractivePromise, WithoutPriorityFairshareCheckpointOptionsAreRefusedInOneLine) {
  SubmitView job = allocation(false);
  job.checkpoint_signal = "USR2";
  const SubmitDecision d = run(job);
  ASSERT_FALSE(d.accepted());
  EXPECT_EQ(d.reason,
            "--checkpoint-signal and --checkpoint-dir need PriorityType=priority/fairshare for an "
            "interactive allocation on this cluster; submit the work with sbatch");
}

}  // namespace
}  // namespace sp
