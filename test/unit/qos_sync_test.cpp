#include "qos_sync.hpp"

#include <gtest/gtest.h>

#include "policy_loader.hpp"

namespace sp {
namespace {

std::shared_ptr<const Policy> example() {
  return policy_of(load_policy_file(std::string(SP_SOURCE_DIR) + "/etc/preempt.yaml"));
}

// What `sacctmgr -nP show qos format=...` prints for QOS created with no options.
constexpr const char* kFresh =
    "normal||cluster|00:00:00||||\n"
    "standby||cluster|00:00:00||||\n"
    "owner||cluster|00:00:00||||\n";

TEST(QosSync, TheShowFormatListsTheGovernedFieldsInOrder) {
  EXPECT_EQ(qos_show_format(),
            "Name,Preempt,PreemptMode,GraceTime,PreemptExemptTime,MaxWall,MaxJobsPU,MaxTRESPU,"
            "Priority");
}

TEST(QosSync, DesiredStateFollowsThePolicy) {
  const auto desired = desired_qos(*example());
  ASSERT_EQ(desired.size(), 3u);
  const QosState& standby = desired[0];
  EXPECT_EQ(standby.name, "standby");
  EXPECT_EQ(standby.fields, (std::vector<QosField>{{"Preempt", ""},
                                                   {"PreemptMode", "requeue"},
                                                   {"GraceTime", "60"},
                                                   {"PreemptExemptTime", ""},
                                                   {"MaxWall", "604800"},
                                                   {"MaxJobsPU", "200"},
                                                   {"MaxTRESPU", "cpu=2048,gres/gpu=128"}}));
  EXPECT_EQ(desired[2].fields[0], (QosField{"Preempt", "standby"}));
  EXPECT_EQ(desired[2].fields[1], (QosField{"PreemptMode", "cluster"}));
}

TEST(QosSync, FromFreshQosEveryDifferenceBecomesOneModify) {
  const auto changes = plan_qos_changes(desired_qos(*example()), parse_qos_show(kFresh));
  ASSERT_EQ(changes.size(), 3u);
  const QosChange& standby = changes[0];
  EXPECT_FALSE(standby.create);
  const auto cmds = sacctmgr_commands(standby);
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0],
            (std::vector<std::string>{"modify", "qos", "standby", "set", "PreemptMode=requeue",
                                      "GraceTime=60", "MaxWall=7-00:00:00", "MaxJobsPerUser=200",
                                      "MaxTRESPerUser=cpu=2048,gres/gpu=128"}));
  EXPECT_EQ(standby.described[0], "PreemptMode cluster -> requeue");
  EXPECT_EQ(standby.described[2], "MaxWall (unset) -> 7-00:00:00");
  EXPECT_EQ(sacctmgr_commands(changes[2])[0],
            (std::vector<std::string>{"modify", "qos", "owner", "set", "Preempt=standby"}));
}

TEST(QosSync, AMatchingSlurmdbdNeedsNoChangeWhateverTheFormatting) {
  const char* synced =
      "normal|standby|CLUSTER|00:00:00|||50|cpu=512,gres/gpu=16\n"
      "standby||requeue|00:01:00||7-00:00:00|200|gres/gpu=128,cpu=2048\n"
      "owner|standby|cluster|00:00:00||||\n";
  // normal's MaxWall is missing: exactly one change remains.
  auto changes = plan_qos_changes(desired_qos(*example()), parse_qos_show(synced));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].qos, "normal");
  EXPECT_EQ(changes[0].described, std::vector<std::string>{"MaxWall (unset) -> 2-00:00:00"});
}

TEST(QosSync, MissingQosAreCreatedThenSet) {
  const auto changes = plan_qos_changes(desired_qos(*example()), parse_qos_show(""));
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_TRUE(changes[1].create);
  EXPECT_EQ(changes[1].described[0], "created");
  const auto cmds = sacctmgr_commands(changes[1]);
  ASSERT_EQ(cmds.size(), 2u);
  EXPECT_EQ(cmds[0], (std::vector<std::string>{"add", "qos", "normal"}));
  EXPECT_EQ(cmds[1][0], "modify");
}

TEST(QosSync, LimitsThePolicyDropsAreCleared) {
  auto p =
      policy_of(load_policy_text("qos:\n  standby:\n    preemptible: true\n"
                                 "    limits: {max_gpus_per_user: 4}\n",
                                 "t.yaml"));
  const char* current = "standby||requeue|00:01:00|00:10:00|7-00:00:00|200|cpu=2048,gres/gpu=128\n";
  const auto changes = plan_qos_changes(desired_qos(*p), parse_qos_show(current));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(sacctmgr_commands(changes[0])[0],
            (std::vector<std::string>{"modify", "qos", "standby", "set", "PreemptExemptTime=-1",
                                      "MaxWall=-1", "MaxJobsPerUser=-1",
                                      "MaxTRESPerUser=cpu=-1,gres/gpu=4"}));
}

TEST(QosSync, MinRuntimeBecomesPreemptExemptTimeAndNeverModeCancels) {
  auto p = policy_of(load_policy_text(
      "qos:\n  scavenger:\n    preemptible: true\n    min_runtime: 10m\n    requeue: never\n"
      "    grace: 30s\n",
      "t.yaml"));
  const auto d = desired_qos(*p);
  EXPECT_EQ(d[0].fields[1], (QosField{"PreemptMode", "cancel"}));
  EXPECT_EQ(d[0].fields[2], (QosField{"GraceTime", "30"}));
  EXPECT_EQ(d[0].fields[3], (QosField{"PreemptExemptTime", "600"}));
}

TEST(QosSync, MalformedShowLinesAreIgnored) {
  EXPECT_TRUE(parse_qos_show("garbage\n|||\n\n").empty());
}

}  // namespace
}  // namespace sp

namespace sp {
namespace {

// sacctmgr stores QOS names in lower case and Slurm matches them without regard to case: a
// policy that writes Standby means the standby QOS slurmdbd has, not a new one to create.
TEST(QosSync, APolicyNameInAnotherCaseIsTheSameQos) {
  auto p = policy_of(load_policy_text("qos:\n  Standby:\n    preemptible: true\n", "t.yaml"));
  const char* current = "standby||requeue|00:01:00||||\n";
  const auto changes = plan_qos_changes(desired_qos(*p), parse_qos_show(current));
  EXPECT_TRUE(changes.empty()) << changes[0].described[0];  // found, and already up to date

  auto q = policy_of(load_policy_text(
      "qos:\n  standby:\n    preemptible: true\n  normal:\n    preempts: [STANDBY]\n", "t.yaml"));
  const char* both = "standby||requeue|00:01:00||||\nnormal|standby|cluster|00:00:00||||\n";
  EXPECT_TRUE(plan_qos_changes(desired_qos(*q), parse_qos_show(both)).empty());
}

}  // namespace
}  // namespace sp

namespace sp {
namespace {

constexpr const char* kQuotaPolicy = R"(version: 1
checkpoint: {grace: 90s}
classes:
  inference:   {priority: 125, preemptible: false}
  interactive: {priority: 75, preemptible: true, grace: 30s}
  train:       {priority: 50, preemptible: true}
quotas:
  project-a: {gpus: 4, limit: 8}
  project-b: {gpus: 2}
)";

std::shared_ptr<const Policy> quota_policy() {
  auto r = load_policy_text(kQuotaPolicy, "q.yaml");
  if (const auto* e = error_of(r)) ADD_FAILURE() << e->str();
  return policy_of(r);
}

TEST(QosSyncClasses, APolicyWithoutQuotasHasNoClassQos) {
  EXPECT_TRUE(desired_class_qos(*example()).empty());  // etc/preempt.yaml: classes, no quotas
}

TEST(QosSyncClasses, OneQosPerClassWithPriorityModeAndGrace) {
  const auto d = desired_class_qos(*quota_policy());
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].name, "inference");
  // Only what a class means: a QOS of that name that exists keeps its limits and Preempt list.
  EXPECT_EQ(d[0].fields, (std::vector<QosField>{
                             {"PreemptMode", "cluster"}, {"GraceTime", "0"}, {"Priority", "125"}}));
  EXPECT_EQ(d[1].fields[0], (QosField{"PreemptMode", "requeue"}));
  EXPECT_EQ(d[1].fields[1], (QosField{"GraceTime", "30"}));  // its own
  EXPECT_EQ(d[2].fields[1], (QosField{"GraceTime", "90"}));  // checkpoint.grace_s
}

TEST(QosSyncClasses, ClassQosAreCreatedThenSetAndThenUpToDate) {
  const auto d = desired_class_qos(*quota_policy());
  auto changes = plan_qos_changes(d, parse_qos_show(""));
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(sacctmgr_commands(changes[1]),
            (std::vector<std::vector<std::string>>{
                {"add", "qos", "interactive"},
                {"modify", "qos", "interactive", "set", "PreemptMode=requeue", "GraceTime=30",
                 "Priority=75"}}));
  // What sacctmgr shows once synced (GraceTime as a time).
  const char* synced =
      "inference||cluster|00:00:00|||||125\n"
      "interactive||requeue|00:00:30|||||75\n"
      "train||requeue|00:01:30|||||50\n";
  EXPECT_TRUE(plan_qos_changes(d, parse_qos_show(synced)).empty());
  // A site's own QOS named like a class keeps its Preempt list and limits.
  const char* site_own = "interactive|standby|requeue|00:00:30||2-00:00:00||gres/gpu=2|75\n";
  for (const auto& ch : plan_qos_changes(d, parse_qos_show(site_own))) {
    EXPECT_NE(ch.qos, "interactive") << ch.described.front();
  }
  changes = plan_qos_changes(d, parse_qos_show("train||requeue|00:01:30|||||10\n"));
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[2].described, (std::vector<std::string>{"Priority 10 -> 50"}));
}

TEST(QosSyncLicenses, MissingLicensesAreAddedWithTheQuotaAsCount) {
  const auto c = plan_license_changes(*quota_policy(), "", "preempt");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].subject, "license quota_project-a@slurm-preempt");
  EXPECT_EQ(c[0].argv, (std::vector<std::string>{"add", "resource", "name=quota_project-a",
                                                 "server=slurm-preempt", "count=4", "type=license",
                                                 "cluster=preempt", "percentallowed=100"}));
}

TEST(QosSyncLicenses, AnotherCountIsModifiedAndTheRightOneLeftAlone) {
  // `sacctmgr -nP show resource withclusters format=Name,Server,Count,Cluster,Allowed`.
  const char* shown =
      "quota_project-a|slurm-preempt|6|preempt|100\n"
      "quota_project-b|slurm-preempt|2|preempt|100\n"
      "other|elsewhere|1|preempt|100\n";
  const auto c = plan_license_changes(*quota_policy(), shown, "preempt");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].described, "count 6 -> 4");
  EXPECT_EQ(c[0].argv,
            (std::vector<std::string>{"modify", "resource", "where", "name=quota_project-a",
                                      "server=slurm-preempt", "set", "count=4"}));
}

TEST(QosSyncLicenses, ALicenseOfAnotherClusterIsAllowedOnThisOne) {
  const char* shown =
      "quota_project-a|slurm-preempt|4|other|100\n"
      "quota_project-b|slurm-preempt|2|preempt|50\n";
  const auto c = plan_license_changes(*quota_policy(), shown, "preempt");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].argv[1], "resource");
  EXPECT_EQ(c[0].argv[0], "add");
  EXPECT_EQ(c[1].argv.back(), "percentallowed=100");
}

// `sacctmgr -nP show assoc where cluster=preempt format=Account,User,GrpTRES,QOS`, as a
// fresh test cluster has it.
constexpr const char* kAssocs =
    "root||||normal\n"
    "project-a|||normal\n"
    "project-a|erin||normal,owner,standby\n"
    "project-b||cpu=10,gres/gpu=3|normal\n"
    "project-b|frank||normal,owner,standby\n";

TEST(QosSyncAccounts, LimitsAndClassQosForAccountsAndTheirUsers) {
  std::string error;
  const auto c = plan_account_changes(*quota_policy(), kAssocs, "preempt", &error);
  EXPECT_EQ(error, "");
  ASSERT_EQ(c.size(), 5u);
  EXPECT_EQ(c[0].described, "GrpTRES gres/gpu (unset) -> 8");
  EXPECT_EQ(c[0].argv, (std::vector<std::string>{"modify", "account", "where", "name=project-a",
                                                 "cluster=preempt", "set", "GrpTRES=gres/gpu=8"}));
  EXPECT_EQ(c[1].argv.back(), "qos+=inference,interactive,train");
  EXPECT_EQ(c[2].argv, (std::vector<std::string>{"modify", "user", "where", "account=project-a",
                                                 "cluster=preempt", "set",
                                                 "qos+=inference,interactive,train"}));
  // project-b's policy gives no limit: the admin's GrpTRES gres/gpu=3 stays as it is.
  for (const auto& change : c)
    EXPECT_EQ(change.described.find("GrpTRES gres/gpu 3"), std::string::npos);
}

TEST(QosSyncAccounts, ASyncedAccountNeedsNothing) {
  const char* synced =
      "project-a||gres/gpu=8|inference,interactive,normal,train\n"
      "project-a|erin||inference,interactive,normal,owner,standby,train\n"
      "project-b||cpu=10|inference,interactive,train\n";
  std::string error;
  EXPECT_TRUE(plan_account_changes(*quota_policy(), synced, "preempt", &error).empty());
  EXPECT_EQ(error, "");
}

TEST(QosSyncAccounts, AnUnknownAccountIsOneErrorNamingTheFix) {
  std::string error;
  const auto c = plan_account_changes(*quota_policy(), "project-a|||normal\n", "preempt", &error);
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(error,
            "account project-b (quotas:) is not in slurmdbd on cluster preempt; add it with: "
            "sacctmgr add account project-b cluster=preempt");
}

}  // namespace
}  // namespace sp
