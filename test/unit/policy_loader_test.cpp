#include "policy_loader.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include "test_support.hpp"

namespace sp {
namespace {

using test::load_err;
using test::load_ok;

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
  EXPECT_EQ(p->starvation, (StarvationPolicy{3, 24 * 3600, 2 * 3600}));  // on in the example
}

TEST(PolicyLoader, StarvationIsOffByDefaultAndCheckedWhereGiven) {
  EXPECT_FALSE(load_ok("version: 1\n")->starvation.enabled());
  EXPECT_EQ(load_ok("starvation: {max_preemptions: 2, window: 1h, protect_for: 30m}\n")->starvation,
            (StarvationPolicy{2, 3600, 1800}));
  EXPECT_EQ(load_ok("starvation: {max_preemptions: 4}\n")->starvation,
            (StarvationPolicy{4, 24 * 3600, 2 * 3600}));
  PolicyError e = load_err("starvation:\n  max_preemptions: -1\n");
  EXPECT_EQ(e.line, 2);
  EXPECT_NE(e.message.find("starvation.max_preemptions"), std::string::npos) << e.message;
  e = load_err("starvation:\n  window: 31d\n");
  EXPECT_NE(e.message.find("starvation.window"), std::string::npos) << e.message;
  e = load_err("starvation: {protect: 1h}\n");
  EXPECT_NE(e.message.find("unknown key 'protect' in starvation"), std::string::npos) << e.message;
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
  EXPECT_NE(load_err("checkpoint:\n  signal: CONT\n").message.find("catchable signal"),
            std::string::npos);
  EXPECT_NE(load_err("checkpoint:\n  signal: 61\n").message.find("catchable signal"),
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

TEST(PolicyLoader, CheckpointStepsDefaultsToAllAndGpuStaysAnOption) {
  EXPECT_EQ(load_ok("")->checkpoint.steps, SignalSteps::All);
  EXPECT_EQ(load_ok("checkpoint:\n  steps: gpu\n")->checkpoint.steps, SignalSteps::Gpu);
  EXPECT_EQ(load_ok("checkpoint:\n  steps: all\n")->checkpoint.steps, SignalSteps::All);
  EXPECT_NE(load_err("checkpoint:\n  steps: cpu\n").message.find("must be gpu or all"),
            std::string::npos);
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

TEST(PolicyLoader, LostWorkChargeIsAFractionDefaultZero) {
  EXPECT_EQ(load_ok("version: 1\n")->priority.lost_work_charge, 0.0);
  EXPECT_EQ(load_ok("priority:\n  lost_work_charge: 0.25\n")->priority.lost_work_charge, 0.25);
  EXPECT_EQ(load_ok("priority: {lost_work_charge: 1}\n")->priority.lost_work_charge, 1.0);
  for (const char* bad : {"1.5", "-0.1", "half", "nan", "0.5x"}) {
    PolicyError e = load_err(std::string("priority:\n  lost_work_charge: ") + bad + "\n");
    EXPECT_EQ(e.line, 2) << bad;
    EXPECT_EQ(e.column, 21) << bad;
    EXPECT_NE(e.message.find("priority.lost_work_charge must be a number from 0 to 1, not '" +
                             std::string(bad) + "'"),
              std::string::npos)
        << e.message;
  }
}

}  // namespace
}  // namespace sp

// Bounded parsing (issue 12 item 4): hostile files fail fast, before libyaml spends quadratic
// time on them, with the usual file:line:column error.
namespace sp {
namespace {

std::string repeat(std::string_view s, int n) {
  std::string out;
  out.reserve(s.size() * static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

bool deep(const PolicyError& e) {
  return e.message.find("nested deeper than 16 levels") != std::string::npos;
}

TEST(PolicyLoaderBounds, DeeplyNestedFlowSequencesAreRefusedAtTheSeventeenthLevel) {
  // Well-formed YAML: without the bound libyaml takes seconds, then "must be a mapping".
  PolicyError e = load_err(repeat("[", 100000) + repeat("]", 100000));
  EXPECT_TRUE(deep(e)) << e.str();
  EXPECT_EQ(e.str().substr(0, 16), "test.yaml:1:17: ");
  // Unclosed: the bound is met before the syntax error at the end.
  EXPECT_TRUE(deep(load_err(repeat("[", 100000))));
}

TEST(PolicyLoaderBounds, DeeplyNestedFlowMappingsAreRefused) {
  PolicyError e = load_err(repeat("{a: ", 50000) + "1" + repeat("}", 50000));
  EXPECT_TRUE(deep(e)) << e.str();
  EXPECT_EQ(e.line, 1);
  EXPECT_EQ(e.column, 1 + 16 * 4);
}

TEST(PolicyLoaderBounds, DeeplyNestedBlockMappingsAreRefused) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += std::string(static_cast<std::size_t>(i), ' ') + "a:\n";
  PolicyError e = load_err(text);
  EXPECT_TRUE(deep(e)) << e.str();
  EXPECT_EQ(e.line, 17);  // the mapping that starts at line 17 is the 17th level
}

TEST(PolicyLoaderBounds, SixteenLevelsPassTheBoundAndMeetTheSchema) {
  // 4 mappings and 12 sequences are 16 levels, not refused for their depth: the schema check
  // reports the first wrong value. One more level is refused.
  PolicyError e = load_err("qos:\n  standby:\n    limits:\n      max_walltime: " + repeat("[", 12) +
                           repeat("]", 12) + "\n");
  EXPECT_FALSE(deep(e)) << e.str();
  EXPECT_NE(e.message.find("qos.standby.limits.max_walltime must be a single value"),
            std::string::npos)
      << e.str();
  EXPECT_TRUE(deep(load_err("qos:\n  standby:\n    limits:\n      max_walltime: " +
                            repeat("[", 13) + repeat("]", 13) + "\n")));
}

TEST(PolicyLoaderClasses, AQosRuleNamedLikeADefaultClassIsThatQosNotTheClass) {
  // Found by fuzzing: "qos: {interactive: ...}" with no classes: section kept the default
  // class interactive too, so --qos=interactive was both.
  auto p =
      load_ok("qos:\n  interactive: {preemptible: true}\n  normal: {preempts: [interactive]}\n");
  ASSERT_TRUE(p);
  EXPECT_NE(p->find_qos("interactive"), nullptr);
  EXPECT_EQ(p->find_class("interactive"), nullptr);
  EXPECT_EQ(p->find_class_rule("interactive"), nullptr);
  EXPECT_NE(p->find_class("train"), nullptr);  // the other defaults stay
  // Declared as a class as well: refused, as before.
  EXPECT_NE(load_err("qos:\n  train: {preemptible: true}\nclasses:\n  train: {priority: 1}\n"
                     "  interactive: {priority: 2}\n")
                .message.find("is also qos."),
            std::string::npos);
}

TEST(PolicyLoaderBounds, TheDeepestLegalPathsStillLoad) {
  auto p = load_ok(
      "qos:\n"
      "  standby:\n"
      "    preemptible: true\n"
      "    limits: {max_walltime: 1d, max_gpus_per_user: 8}\n"
      "  normal: {preempts: [standby], limits: {max_cpus_per_user: 64}}\n"
      "priority: {weights: {age: 5, fairshare: 7, class: 9, over_quota: 11}}\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->priority.priority_class, 9u);
  EXPECT_EQ(p->priority.over_quota, 11u);
  EXPECT_EQ(p->find_qos("standby")->limits.max_walltime_s, 86400);
  EXPECT_EQ(p->find_qos("normal")->limits.max_cpus_per_user, 64);
  EXPECT_EQ(p->priority.age, 5u);
  EXPECT_EQ(p->priority.fairshare, 7u);
}

TEST(PolicyLoaderBounds, FilesOverOneMebibyteAreRefusedBeforeParsing) {
  // Valid YAML (comments only) one byte over the limit.
  const std::string big = "version: 1\n#" + std::string((std::size_t{1} << 20) - 11, 'x');
  ASSERT_EQ(big.size(), (std::size_t{1} << 20) + 1);
  EXPECT_EQ(load_err(big).str(),
            "test.yaml: the policy is larger than 1 MiB; a policy is a few KB: check that this "
            "is the right file");
  EXPECT_TRUE(load_ok(big.substr(0, big.size() - 1)));  // exactly 1 MiB loads

  const std::string path = ::testing::TempDir() + "/sp-oversize-preempt.yaml";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << big;
  }
  auto r = load_policy_file(path);
  std::remove(path.c_str());
  ASSERT_NE(error_of(r), nullptr);
  EXPECT_EQ(error_of(r)->str(), path +
                                    ": the policy is larger than 1 MiB; a policy is a few KB: "
                                    "check that this is the right file");
}

TEST(PolicyLoaderBounds, AFewAliasesAreFineTooManyAreRefused) {
  auto p = load_ok(
      "qos:\n"
      "  standby:\n"
      "    preemptible: true\n"
      "    limits: &lim {max_gpus_per_user: 4}\n"
      "  normal: {preempts: [standby], limits: *lim}\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->find_qos("normal")->limits.max_gpus_per_user, 4);

  std::string many = "qos:\n  standby: {preemptible: true}\n  normal: {preempts: &l [standby]}\n";
  for (int i = 0; i < 65; ++i) many += "  q" + std::to_string(i) + ": {preempts: *l}\n";
  PolicyError e = load_err(many);
  EXPECT_EQ(e.line, 3 + 65) << e.str();
  EXPECT_NE(e.message.find("more than 64 aliases"), std::string::npos) << e.str();

  std::string anchors = "qos:\n";
  for (int i = 0; i < 65; ++i)
    anchors += "  q" + std::to_string(i) + ": &a" + std::to_string(i) + " {}\n";
  e = load_err(anchors);
  EXPECT_EQ(e.line, 1 + 65) << e.str();
  EXPECT_NE(e.message.find("more than 64 anchors"), std::string::npos) << e.str();
}

TEST(PolicyLoaderBounds, AliasesCannotMultiplyTheWorkPastTheValueBudget) {
  // 12 QOS sharing one 2000-name preempts list: 24000 values once expanded, 6000 written.
  std::string text = "qos:\n";
  std::string list;
  for (int i = 0; i < 2000; ++i) {
    text += "  s" + std::to_string(i) + ": {preemptible: true}\n";
    list += (list.empty() ? "" : ", ") + ("s" + std::to_string(i));
  }
  text += "  p: {preempts: &all [" + list + "]}\n";
  for (int i = 0; i < 12; ++i) text += "  p" + std::to_string(i) + ": {preempts: *all}\n";
  PolicyError e = load_err(text);
  EXPECT_NE(e.message.find("more than 20000 values"), std::string::npos) << e.str();
}

TEST(PolicyLoaderBounds, OwnerGroupsExpandToABoundedNumberOfNodes) {
  // Each group alone is within expand_hostlist's bound; together they are not.
  std::string text = "partitions: {public: [pub], standby: sb}\nowners:\n";
  for (int i = 0; i < 3; ++i) {
    text += "  g" + std::to_string(i) + ": {partitions: [p" + std::to_string(i) + "], nodes: 'g" +
            std::to_string(i) + "n[1-30000]'}\n";
  }
  PolicyError e = load_err(text);
  EXPECT_EQ(e.line, 5) << e.str();
  EXPECT_NE(e.message.find("owners.g2.nodes is not a valid hostlist of at most 5536 nodes"),
            std::string::npos)
      << e.str();
  text.resize(text.rfind("  g2"));
  EXPECT_TRUE(load_ok(text));
}

TEST(PolicyLoaderBounds, DuplicatesAreFoundInLongLists) {
  // 15000 names, the last one twice: found (by a set lookup per name, not a scan).
  std::string text = "partitions:\n  public: [";
  for (int i = 0; i < 15000; ++i) text += (i ? ",p" : "p") + std::to_string(i);
  text += ",p14999]\n";
  PolicyError e = load_err(text);
  EXPECT_NE(e.message.find("'p14999' is listed twice in partitions.public"), std::string::npos)
      << e.str();
}

TEST(PolicyLoaderQuotas, TheIssuesFormsLoad) {
  auto p = load_ok(
      "classes:\n"
      "  inference:   {priority: 125, preemptible: false}\n"
      "  interactive: {priority: 75,  preemptible: true, grace: 30s, min_runtime: 0}\n"
      "  train:       {priority: 50,  preemptible: true, grace: 60s}\n"
      "quotas:\n"
      "  project-a: {gpus: 4}\n"
      "  project-b: {gpus: 4, limit: 8, over_quota_weight: 2}\n"
      "  project-c: {gpus: 8, partitions: [pool]}\n"
      "default_class: {batch: train, interactive: interactive}\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->find_class("train")->grace_s, 60);
  EXPECT_EQ(p->find_quota("project-b")->over_quota_weight, 2u);
  EXPECT_EQ(p->find_quota("project-a")->limit, -1);
  EXPECT_TRUE(p->find_quota("project-c")->counts_partition("pool"));
  EXPECT_FALSE(p->find_quota("project-c")->counts_partition("public"));
  EXPECT_TRUE(p->find_quota("project-a")->counts_partition("public"));
}

TEST(PolicyLoaderQuotas, LimitBelowQuotaSaysWhereAndWhat) {
  PolicyError e = load_err("quotas:\n  project-b: {gpus: 4, limit: 2}\n");
  EXPECT_EQ(e.line, 2);
  EXPECT_NE(e.message.find("limit 2 is below its quota of 4 GPUs"), std::string::npos) << e.str();
}

TEST(PolicyLoaderQuotas, AQuotaNeedsGpus) {
  PolicyError e = load_err("quotas:\n  project-b: {limit: 2}\n");
  EXPECT_NE(e.message.find("must give gpus"), std::string::npos) << e.str();
}

TEST(PolicyLoaderQuotas, DefaultClassMustBeAClass) {
  PolicyError e = load_err("quotas:\n  project-a: {gpus: 1}\ndefault_class: {batch: training}\n");
  EXPECT_EQ(e.line, 3);
  EXPECT_NE(e.message.find("'training', which is not a class"), std::string::npos) << e.str();
}

TEST(PolicyLoaderQuotas, AClassIsNotAlsoAQosRule) {
  PolicyError e =
      load_err("qos:\n  train: {preemptible: true}\nclasses:\n  train: {priority: 5}\n");
  EXPECT_NE(e.message.find("classes.train is also qos.train"), std::string::npos) << e.str();
}

TEST(PolicyLoaderQuotas, ASiteQosNamedLikeADefaultClassStaysValid) {
  // A policy from before classes mattered: no classes: section, a qos: rule called train.
  auto p = load_ok("qos:\n  train: {preemptible: true}\n  normal: {preempts: [train]}\n");
  ASSERT_TRUE(p);
  EXPECT_NE(p->find_qos("train"), nullptr);
}

TEST(PolicyLoaderQuotas, NonPreemptibleClassesHaveNoGrace) {
  PolicyError e = load_err("classes:\n  inference: {priority: 1, preemptible: false, grace: 5s}\n");
  EXPECT_NE(e.message.find("not preemptible"), std::string::npos) << e.str();
}

TEST(PolicyLoaderQuotas, AnAccountHasNodesOrAQuotaNotBoth) {
  PolicyError e =
      load_err("owners:\n  chem: {partitions: [chem], nodes: n1}\nquotas:\n  chem: {gpus: 1}\n");
  EXPECT_NE(e.message.find("also an owner group"), std::string::npos) << e.str();
}

}  // namespace
}  // namespace sp
