#include "policy_loader.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <string>

namespace sp {
namespace {

std::shared_ptr<const Policy> load_ok(const std::string& text) {
  auto r = load_policy_text(text, "test.yaml");
  if (const auto* e = error_of(r)) ADD_FAILURE() << e->str();
  return policy_of(r);
}

PolicyError load_err(const std::string& text) {
  auto r = load_policy_text(text, "test.yaml");
  const auto* e = error_of(r);
  if (e == nullptr) {
    ADD_FAILURE() << "expected an error for:\n" << text;
    return {};
  }
  return *e;
}

TEST(PolicyLoader, EmptyFileGivesTheDefaults) {
  auto p = load_ok("");
  ASSERT_TRUE(p);
  Policy expected = default_policy();
  expected.source = "test.yaml";
  EXPECT_EQ(*p, expected);
  ASSERT_NE(p->find_qos("standby"), nullptr);
  EXPECT_TRUE(p->find_qos("standby")->preemptible);
  EXPECT_EQ(p->find_qos("normal")->preempts, std::vector<std::string>{"standby"});
  EXPECT_EQ(p->checkpoint.signal, SIGUSR1);
  EXPECT_EQ(p->classes.size(), 4u);
}

TEST(PolicyLoader, TheShippedExamplePolicyLoads) {
  auto r = load_policy_file(std::string(SP_SOURCE_DIR) + "/etc/preempt.yaml");
  ASSERT_EQ(error_of(r), nullptr) << error_of(r)->str();
  auto p = policy_of(r);
  const QosRule* standby = p->find_qos("standby");
  ASSERT_NE(standby, nullptr);
  EXPECT_EQ(standby->boost, 1000u);
  EXPECT_EQ(standby->grace_s, 60);
  EXPECT_EQ(standby->limits.max_walltime_s, 7 * 86400);
  EXPECT_EQ(p->find_qos("normal")->limits.max_gpus_per_user, 16);
  ASSERT_NE(p->find_owner("chem"), nullptr);
  EXPECT_EQ(p->find_owner("chem")->node_names, (std::vector<std::string>{"n3", "n4"}));
  EXPECT_EQ(p->find_owner("bio")->partitions, std::vector<std::string>{"bio"});
  EXPECT_EQ(p->public_partitions, std::vector<std::string>{"public"});
  EXPECT_EQ(p->priority.half_life_s, 7 * 86400);
  EXPECT_EQ(p->priority.calc_period_s, 300);
  EXPECT_FALSE(p->classes[0].preemptible);
}

TEST(PolicyLoader, UnknownTopLevelKeyNamesFileLineAndColumn) {
  PolicyError e = load_err("version: 1\n\nstandbyy: {}\n");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.column, 1);
  EXPECT_NE(e.message.find("unknown key 'standbyy'"), std::string::npos) << e.message;
  EXPECT_EQ(e.str().rfind("test.yaml:3:1: unknown key 'standbyy' in the top level", 0), 0u)
      << e.str();
}

TEST(PolicyLoader, UnknownNestedKeyPointsAtTheKey) {
  PolicyError e = load_err("qos:\n  standby:\n    preemptible: true\n    bost: 5\n");
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.column, 5);
  EXPECT_NE(e.message.find("unknown key 'bost' in qos.standby"), std::string::npos);
}

TEST(PolicyLoader, WrongTypesAreErrors) {
  EXPECT_EQ(load_err("qos:\n  standby:\n    preemptible: maybe\n").line, 3);
  EXPECT_EQ(load_err("qos:\n  standby:\n    boost: lots\n").column, 12);
  EXPECT_NE(load_err("checkpoint: [1, 2]\n").message.find("checkpoint must be a mapping"),
            std::string::npos);
  EXPECT_NE(load_err("qos:\n  s:\n    preemptible: true\n    boost: [1]\n")
                .message.find("must be a single value"),
            std::string::npos);
}

TEST(PolicyLoader, OutOfRangeValuesAreErrors) {
  EXPECT_NE(load_err("qos:\n  standby:\n    preemptible: true\n    boost: 2000000\n")
                .message.find("between 0 and 1000000"),
            std::string::npos);
  PolicyError neg = load_err("qos:\n  normal:\n    limits:\n      max_cpus_per_user: -1\n");
  EXPECT_EQ(neg.line, 4);
  EXPECT_EQ(neg.column, 26);
  EXPECT_NE(load_err("checkpoint:\n  grace: 2d\n").message.find("at most 86400"),
            std::string::npos);
  EXPECT_NE(load_err("checkpoint:\n  grace: -5\n").message.find("duration"), std::string::npos);
  EXPECT_NE(load_err("version: 2\n").message.find("between 1 and 1"), std::string::npos);
  EXPECT_NE(load_err("priority:\n  weights: {age: 4294967296}\n").message.find("between 0 and"),
            std::string::npos);
}

TEST(PolicyLoader, BadSignalsAreErrors) {
  EXPECT_NE(load_err("checkpoint:\n  signal: USR3\n").message.find("catchable signal"),
            std::string::npos);
  EXPECT_NE(load_err("checkpoint:\n  signal: KILL\n").message.find("catchable signal"),
            std::string::npos);
  auto p = load_ok("checkpoint:\n  signal: SIGUSR2\n");
  EXPECT_EQ(p->checkpoint.signal, SIGUSR2);
  // What a promise could not carry (decode_checkpoint) is refused here already.
  for (const char* bad : {"CONT", "STOP", "32", "61", "63"}) {
    EXPECT_NE(load_err(std::string("checkpoint:\n  signal: ") + bad + "\n")
                  .message.find("catchable signal"),
              std::string::npos)
        << bad;
  }
}

TEST(PolicyLoader, NamesSlurmComparesWithoutCaseMayNotRepeatInAnotherCase) {
  PolicyError q = load_err("qos:\n  standby:\n    preemptible: true\n  Standby:\n    boost: 1\n");
  EXPECT_EQ(q.line, 4);
  EXPECT_NE(q.message.find("Slurm ignores the case of QOS names"), std::string::npos) << q.message;
  PolicyError o = load_err(
      "owners:\n  chem:\n    partitions: [chem]\n    nodes: n3\n"
      "  CHEM:\n    partitions: [chem2]\n    nodes: n4\n");
  EXPECT_NE(o.message.find("Slurm ignores the case of account names"), std::string::npos)
      << o.message;
  // A preempts list may name a QOS in another case, as Slurm would take it.
  auto p = load_ok("qos:\n  standby:\n    preemptible: true\n  normal:\n    preempts: [Standby]\n");
  EXPECT_TRUE(p->find_qos("STANDBY")->preemptible);
}

TEST(PolicyLoader, DuplicateKeysAreErrors) {
  PolicyError e = load_err("qos:\n  standby:\n    preemptible: true\n  standby:\n    boost: 1\n");
  EXPECT_EQ(e.line, 4);
  EXPECT_NE(e.message.find("duplicate key 'standby'"), std::string::npos);
}

TEST(PolicyLoader, AQosThatPreemptsAndIsPreemptibleIsRejected) {
  PolicyError e = load_err(
      "qos:\n  standby:\n    preemptible: true\n  scavenger:\n    preemptible: true\n"
      "    preempts: [standby]\n");
  EXPECT_EQ(e.line, 4);
  EXPECT_NE(e.message.find("both preemptible and a preemptor"), std::string::npos) << e.message;
}

TEST(PolicyLoader, PreemptingAnUnknownOrNonPreemptibleQosIsRejected) {
  EXPECT_NE(load_err("qos:\n  owner:\n    preempts: [ghost]\n").message.find("not defined"),
            std::string::npos);
  PolicyError e = load_err("qos:\n  normal: {}\n  owner:\n    preempts: [normal]\n");
  EXPECT_EQ(e.line, 4);
  EXPECT_NE(e.message.find("not preemptible"), std::string::npos);
  EXPECT_NE(load_err("qos:\n  a:\n    preemptible: true\n  b:\n    preempts: [a, a]\n")
                .message.find("listed twice"),
            std::string::npos);
}

TEST(PolicyLoader, RequeueAndMinRuntimeNeedAPreemptibleQos) {
  EXPECT_NE(load_err("qos:\n  normal:\n    requeue: always\n").message.find("not preemptible"),
            std::string::npos);
  auto p = load_ok(
      "qos:\n  standby:\n    preemptible: true\n    requeue: default\n"
      "    min_runtime: 10m\n");
  EXPECT_EQ(p->find_qos("standby")->requeue, RequeueMode::Default);
  EXPECT_EQ(p->find_qos("standby")->min_runtime_s, 600);
  EXPECT_NE(load_err("qos:\n  s:\n    preemptible: true\n    requeue: sometimes\n")
                .message.find("user, default, always, never"),
            std::string::npos);
}

TEST(PolicyLoader, ANodeOwnedByTwoGroupsIsRejected) {
  PolicyError e = load_err(
      "owners:\n  chem:\n    partitions: [chem]\n    nodes: n[3-4]\n"
      "  bio:\n    partitions: [bio]\n    nodes: n[4-6]\n");
  EXPECT_EQ(e.line, 7);
  EXPECT_NE(e.message.find("node n4 is owned by both chem and bio"), std::string::npos)
      << e.message;
}

TEST(PolicyLoader, OwnerGroupsNeedNodesAndPartitionsOfTheirOwn) {
  EXPECT_NE(
      load_err("owners:\n  chem:\n    partitions: [chem]\n").message.find("must name its nodes"),
      std::string::npos);
  EXPECT_NE(load_err("owners:\n  chem:\n    nodes: n1\n").message.find("partitions"),
            std::string::npos);
  EXPECT_NE(load_err("owners:\n  chem:\n    partitions: [chem]\n    nodes: n[\n")
                .message.find("not a valid hostlist"),
            std::string::npos);
  EXPECT_NE(load_err("owners:\n  chem:\n    partitions: [public]\n    nodes: n1\n")
                .message.find("also a public or standby partition"),
            std::string::npos);
}

TEST(PolicyLoader, MalformedYamlReportsThePosition) {
  PolicyError e = load_err("qos:\n  standby: {preemptible: true\n");
  EXPECT_GT(e.line, 0);
  EXPECT_NE(e.message.find("invalid YAML"), std::string::npos);
  PolicyError tab = load_err("qos:\n\tstandby: {}\n");
  EXPECT_EQ(tab.line, 2);
}

TEST(PolicyLoader, TopLevelMustBeAMappingAndASingleDocument) {
  EXPECT_NE(load_err("- a\n- b\n").message.find("must be a mapping"), std::string::npos);
  EXPECT_NE(load_err("version: 1\n---\nversion: 1\n").message.find("single YAML document"),
            std::string::npos);
}

TEST(PolicyLoader, MissingFileIsAnErrorWithoutPosition) {
  auto r = load_policy_file("/nonexistent/preempt.yaml");
  ASSERT_NE(error_of(r), nullptr);
  EXPECT_EQ(error_of(r)->str(), "/nonexistent/preempt.yaml: cannot open the policy file");
}

TEST(PolicyLoader, ASectionReplacesItsDefaultsAndLeavesTheOthers) {
  auto p = load_ok("classes:\n  batch: {priority: 10}\n");
  ASSERT_EQ(p->classes.size(), 1u);
  EXPECT_EQ(p->classes[0].name, "batch");
  EXPECT_TRUE(p->classes[0].preemptible);
  EXPECT_EQ(p->qos, default_qos());
  EXPECT_EQ(p->grace_for(*p->find_qos("standby")), 60);
}

}  // namespace
}  // namespace sp

namespace sp {
namespace {

TEST(PolicyLoader, PriorityCalcPeriodInSeconds) {
  auto p = load_ok("priority:\n  calc_period: 5s\n  half_life: 30s\n");
  EXPECT_EQ(p->priority.calc_period_s, 5);
  EXPECT_EQ(p->priority.half_life_s, 30);
  PolicyError e = load_err("priority:\n  calc_period: 0s\n");
  EXPECT_NE(e.message.find("priority.calc_period must be positive"), std::string::npos)
      << e.message;
}

}  // namespace
}  // namespace sp
