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

// A policy without quotas: classes are Slurm QOS like any other, as before issue 13.
TEST_F(Decide, WithoutQuotasClassesAndLicensesAreLeftToSlurm) {
  ASSERT_TRUE(policy->quotas.empty());
  SubmitView job;
  job.qos = "inference";
  job.account = "chem";
  job.gpus = 64;
  job.licenses = "quota_chem@slurm-preempt:4";
  SubmitDecision d = run(job);
  EXPECT_TRUE(d.accepted()) << d.reason;
  EXPECT_FALSE(d.add_license.has_value());
  SubmitView plain;
  plain.account = "public";
  plain.gpus = 4;
  d = run(plain);
  EXPECT_TRUE(d.accepted()) << d.reason;
  EXPECT_FALSE(d.set_qos.has_value());
  EXPECT_FALSE(d.default_class);
}

// The issue's policy: classes, and quotas for three projects.
class DecideQuota : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = load_policy_text(R"(
classes:
  inference:   {priority: 125, preemptible: false}
  build:       {priority: 100, preemptible: false}
  interactive: {priority: 75,  preemptible: true}
  train:       {priority: 50,  preemptible: true}
quotas:
  project-a: {gpus: 4}
  project-b: {gpus: 4, limit: 8}
  project-c: {gpus: 8, partitions: [pool, pool2]}
  project-z: {gpus: 0}
)",
                              "quota.yaml");
    if (const auto* e = error_of(r)) FAIL() << e->str();
    policy = policy_of(r);
  }
  SubmitDecision run(const SubmitView& v) const { return decide(v, *policy, kNow); }
  static SubmitView job(const char* account, const char* qos, uint64_t gpus) {
    SubmitView v;
    v.account = account;
    v.qos = qos;
    v.gpus = gpus;
    return v;
  }
  std::shared_ptr<const Policy> policy;
};

TEST_F(DecideQuota, AProjectsBatchJobWithoutQosGetsTheDefaultBatchClass) {
  const SubmitDecision d = run(job("project-a", "", 2));
  ASSERT_TRUE(d.accepted()) << d.reason;
  ASSERT_TRUE(d.set_qos.has_value());
  EXPECT_EQ(*d.set_qos, "train");
  EXPECT_TRUE(d.default_class);
  EXPECT_FALSE(d.add_license.has_value());  // train is preemptible
}

TEST_F(DecideQuota, APreemptibleClassJobGetsTheCheckpointPromiseWithItsClassGrace) {
  SubmitView v = job("project-a", "interactive", 4);
  SubmitDecision d = run(v);
  ASSERT_TRUE(d.accepted()) << d.reason;
  ASSERT_TRUE(d.checkpoint.has_value());
  EXPECT_EQ(d.checkpoint->grace_s, policy->checkpoint.grace_s);  // the class gives none
  EXPECT_FALSE(run(job("project-a", "inference", 4)).checkpoint.has_value());
  auto r = load_policy_text(
      "classes:\n  train: {priority: 50, grace: 7s}\nquotas:\n  project-a: {gpus: 4}\n"
      "default_class: {batch: train, interactive: train}\n",
      "grace.yaml");
  ASSERT_EQ(error_of(r), nullptr) << error_of(r)->str();
  d = decide(job("project-a", "", 4), *policy_of(r), kNow);  // the default class' own grace
  ASSERT_TRUE(d.checkpoint.has_value());
  EXPECT_EQ(d.checkpoint->grace_s, 7);
}

TEST_F(DecideQuota, AProjectsAllocationWithoutQosGetsTheDefaultInteractiveClass) {
  SubmitView v = job("PROJECT-A", "", 1);
  v.interactive = true;
  const SubmitDecision d = run(v);
  ASSERT_TRUE(d.accepted()) << d.reason;
  ASSERT_TRUE(d.set_qos.has_value());
  EXPECT_EQ(*d.set_qos, "interactive");
}

TEST_F(DecideQuota, TheAccountFromTheAssociationCounts) {
  SubmitView v = job("", "", 1);
  v.assoc_account = "project-b";
  SubmitDecision d = run(v);
  ASSERT_TRUE(d.accepted()) << d.reason;
  ASSERT_TRUE(d.set_qos.has_value());
  EXPECT_EQ(*d.set_qos, "train");
  v.qos = "inference";
  v.gpus = 3;
  d = run(v);
  ASSERT_TRUE(d.accepted()) << d.reason;
  ASSERT_TRUE(d.add_license.has_value());
  EXPECT_EQ(d.add_license->name, "quota_project-b");
}

TEST_F(DecideQuota, AnAccountWithoutQuotaKeepsItsQosAndSlurmsDefault) {
  SubmitDecision d = run(job("chem", "", 2));
  EXPECT_TRUE(d.accepted()) << d.reason;
  EXPECT_FALSE(d.set_qos.has_value());
  EXPECT_FALSE(d.default_class);
  d = run(job("chem", "train", 2));
  EXPECT_TRUE(d.accepted()) << d.reason;
  EXPECT_FALSE(d.set_qos.has_value());
  EXPECT_FALSE(d.add_license.has_value());
}

TEST_F(DecideQuota, AnExplicitQosIsKept) {
  const SubmitDecision d = run(job("project-a", "interactive", 2));
  ASSERT_TRUE(d.accepted()) << d.reason;
  EXPECT_FALSE(d.set_qos.has_value());
  EXPECT_FALSE(d.default_class);
}

TEST_F(DecideQuota, ANonPreemptibleClassWithoutQuotaIsRejected) {
  for (const char* qos : {"inference", "build", "Inference"}) {
    const SubmitDecision d = run(job("chem", qos, 1));
    ASSERT_FALSE(d.accepted()) << qos;
    EXPECT_EQ(d.kind, SubmitDecision::RejectKind::Qos);
    EXPECT_NE(d.reason.find("runs only within a project's GPU quota and account"),
              std::string::npos)
        << d.reason;
    EXPECT_NE(d.reason.find("chem"), std::string::npos) << d.reason;
    EXPECT_NE(d.reason.find("use --qos=train (preemptible)"), std::string::npos) << d.reason;
    EXPECT_EQ(d.reason.find('\n'), std::string::npos);
  }
}

TEST_F(DecideQuota, ANonPreemptibleClassAboveTheQuotaIsRejectedWithTheNumbers) {
  const SubmitDecision d = run(job("project-a", "inference", 8));
  ASSERT_FALSE(d.accepted());
  EXPECT_EQ(d.kind, SubmitDecision::RejectKind::Qos);
  EXPECT_EQ(d.reason,
            "job asks for 8 GPUs with qos inference, above project-a's quota of 4 GPUs; "
            "non-preemptible classes run only within the quota: ask for at most 4 or use "
            "--qos=train");
  const SubmitDecision zero = run(job("project-z", "build", 1));
  ASSERT_FALSE(zero.accepted());
  EXPECT_EQ(zero.reason.find("at most"), std::string::npos) << zero.reason;
}

TEST_F(DecideQuota, ANonPreemptibleClassWithinTheQuotaGetsTheQuotaLicense) {
  for (uint64_t gpus : {1u, 4u}) {
    const SubmitDecision d = run(job("project-a", "inference", gpus));
    ASSERT_TRUE(d.accepted()) << d.reason;
    ASSERT_TRUE(d.add_license.has_value());
    EXPECT_EQ(d.add_license->name, "quota_project-a");
    EXPECT_EQ(d.add_license->count, gpus);
    EXPECT_TRUE(d.changes());
    EXPECT_FALSE(d.set_qos.has_value());
  }
}

TEST_F(DecideQuota, ANonPreemptibleClassWithoutGpusNeedsNoLicense) {
  const SubmitDecision d = run(job("project-a", "build", 0));
  ASSERT_TRUE(d.accepted()) << d.reason;
  EXPECT_FALSE(d.add_license.has_value());
}

TEST_F(DecideQuota, TheLicenseOnlyInPartitionsTheQuotaCounts) {
  SubmitView v = job("project-c", "inference", 2);
  v.partition = "pool";
  SubmitDecision d = run(v);
  ASSERT_TRUE(d.accepted()) << d.reason;
  ASSERT_TRUE(d.add_license.has_value());
  EXPECT_EQ(d.add_license->count, 2u);
  v.partition = "pool,pool2";
  d = run(v);
  ASSERT_TRUE(d.accepted()) << d.reason;
  EXPECT_TRUE(d.add_license.has_value());
  for (const char* partition : {"", "public", "pool,public"}) {
    v.partition = partition;
    d = run(v);
    ASSERT_TRUE(d.accepted()) << partition << ": " << d.reason;
    EXPECT_FALSE(d.add_license.has_value()) << partition;
  }
  // A quota counted everywhere counts the default partition and any named one.
  SubmitView a = job("project-a", "inference", 2);
  a.partition = "public";
  d = run(a);
  ASSERT_TRUE(d.accepted()) << d.reason;
  EXPECT_TRUE(d.add_license.has_value());
}

TEST_F(DecideQuota, AQuotaLicenseTheUserAsksForIsRejected) {
  for (const char* lic :
       {"quota_project-a@slurm-preempt:4", "matlab:1,QUOTA_project-b@Slurm-Preempt",
        "matlab|quota_x@slurm-preempt:1"}) {
    SubmitView v = job("project-a", "train", 0);
    v.licenses = lic;
    const SubmitDecision d = run(v);
    ASSERT_FALSE(d.accepted()) << lic;
    EXPECT_NE(d.reason.find("are set by the scheduler; remove -L"), std::string::npos) << d.reason;
  }
  for (const char* lic : {"matlab:2", "quota_a:1", "quota@slurm-preempt:1"}) {
    SubmitView v = job("project-a", "inference", 1);
    v.licenses = lic;
    const SubmitDecision d = run(v);
    ASSERT_TRUE(d.accepted()) << lic << ": " << d.reason;
    EXPECT_TRUE(d.add_license.has_value());
  }
}

TEST_F(DecideQuota, AnOwnersJobKeepsItsOwnerQos) {
  // No owner groups in this policy: the default routing still applies to non-project jobs.
  SubmitView v = job("public", "standby", 0);
  v.partition = "standby";
  const SubmitDecision d = run(v);
  EXPECT_TRUE(d.accepted()) << d.reason;
  EXPECT_FALSE(d.add_license.has_value());
}

}  // namespace
}  // namespace sp
