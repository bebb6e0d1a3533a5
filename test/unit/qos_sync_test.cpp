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
            "Name,Preempt,PreemptMode,GraceTime,PreemptExemptTime,MaxWall,MaxJobsPU,MaxTRESPU");
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
