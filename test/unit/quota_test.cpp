#include "quota.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "checkpoint.hpp"
#include "policy_loader.hpp"

namespace sp {
namespace {

// The issue's policy: four classes, three projects.
const char* const kPolicy = R"(
classes:
  inference:   {priority: 125, preemptible: false}
  build:       {priority: 100, preemptible: false}
  interactive: {priority: 75,  preemptible: true, grace: 30s, min_runtime: 0}
  train:       {priority: 50,  preemptible: true, grace: 60s, min_runtime: 10m}
quotas:
  project-a: {gpus: 4}
  project-b: {gpus: 4, limit: 8}
  project-c: {gpus: 8, partitions: [pool]}
)";

class QuotaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = load_policy_text(kPolicy, "quota.yaml");
    if (const auto* e = error_of(r)) FAIL() << e->str();
    policy = policy_of(r);
  }
  int cls(const char* name) const { return policy->class_index(name); }
  int project(const char* name) const { return policy->quota_index(name); }
  QuotaRunningJob job(uint32_t id, const char* proj, const char* c, uint64_t gpus,
                      int64_t start) const {
    return {id, proj ? project(proj) : -1, cls(c), gpus, true, start};
  }
  std::shared_ptr<const Policy> policy;
};

TEST_F(QuotaTest, PolicyKeepsTheIssuesForms) {
  ASSERT_EQ(policy->classes.size(), 4u);
  EXPECT_EQ(policy->find_class("interactive")->grace_s, 30);
  EXPECT_EQ(policy->find_class("train")->min_runtime_s, 600);
  EXPECT_EQ(policy->find_quota("project-b")->limit, 8);
  EXPECT_EQ(policy->find_quota("PROJECT-C")->partitions, std::vector<std::string>{"pool"});
  EXPECT_EQ(policy->find_quota("project-a")->license, "quota_project-a");
  EXPECT_EQ(policy->default_class.batch, "train");
  EXPECT_EQ(policy->default_class.interactive, "interactive");
}

TEST_F(QuotaTest, OneGangJobOverQuotaIsBorrowing) {
  std::vector<QuotaRunningJob> jobs = {job(1, "project-a", "train", 8, 100)};
  const QuotaSnapshot s = build_quota_snapshot(*policy, jobs);
  EXPECT_EQ(s.projects[0].used, 8u);
  EXPECT_EQ(s.projects[0].borrowed, 4u);
  EXPECT_TRUE(s.is_borrowing(1));
}

TEST_F(QuotaTest, TheYoungestOfTheLowestClassIsTheBorrowingOne) {
  std::vector<QuotaRunningJob> jobs = {job(1, "project-a", "train", 4, 100),
                                       job(2, "project-a", "train", 4, 200)};
  QuotaSnapshot s = build_quota_snapshot(*policy, jobs);
  EXPECT_FALSE(s.is_borrowing(1));
  EXPECT_TRUE(s.is_borrowing(2));
  // A higher class fills the quota first even when it is younger.
  jobs = {job(1, "project-a", "train", 4, 100), job(2, "project-a", "interactive", 4, 200)};
  s = build_quota_snapshot(*policy, jobs);
  EXPECT_TRUE(s.is_borrowing(1));
  EXPECT_FALSE(s.is_borrowing(2));
}

TEST_F(QuotaTest, NonPreemptibleJobsFillTheQuotaAndAreNeverBorrowing) {
  std::vector<QuotaRunningJob> jobs = {job(1, "project-a", "train", 4, 100),
                                       job(2, "project-a", "inference", 4, 200),
                                       job(3, "project-a", "build", 2, 300)};
  const QuotaSnapshot s = build_quota_snapshot(*policy, jobs);
  EXPECT_EQ(s.projects[0].nonpreemptible, 6u);
  EXPECT_TRUE(s.is_borrowing(1));
  EXPECT_FALSE(s.is_borrowing(2));
  EXPECT_FALSE(s.is_borrowing(3));
}

TEST_F(QuotaTest, JobsOutsideTheQuotasPartitionsOrOfNoProjectBorrow) {
  QuotaRunningJob outside = job(1, "project-c", "train", 2, 100);
  outside.counted = false;
  std::vector<QuotaRunningJob> jobs = {outside, job(2, nullptr, "train", 1, 100),
                                       job(3, nullptr, "inference", 1, 100)};
  const QuotaSnapshot s = build_quota_snapshot(*policy, jobs);
  EXPECT_EQ(s.projects[2].used, 0u);
  EXPECT_TRUE(s.is_borrowing(1));
  EXPECT_TRUE(s.is_borrowing(2));
  EXPECT_FALSE(s.is_borrowing(3));
}

class DecisionTest : public QuotaTest {
 protected:
  VictimView victim(const char* proj, const char* c, bool borrowing) const {
    VictimView v;
    v.job_id = 10;
    v.running = true;
    v.project = proj ? project(proj) : -1;
    v.cls = cls(c);
    v.borrowing = borrowing;
    return v;
  }
  PreemptorView preemptor(const char* proj, const char* c, uint64_t gpus, uint64_t used) const {
    PreemptorView p;
    p.job_id = 20;
    p.project = proj ? project(proj) : -1;
    p.cls = cls(c);
    p.gpus = gpus;
    p.counted = true;
    p.project_used = used;
    return p;
  }
};

TEST_F(DecisionTest, AProjectWithinItsQuotaReclaimsBorrowedGpus) {
  EXPECT_EQ(may_preempt(victim("project-a", "train", true),
                        preemptor("project-b", "interactive", 4, 0), *policy),
            PreemptReason::QuotaReclaim);
}

TEST_F(DecisionTest, AJobInsideItsProjectsQuotaIsNotReclaimed) {
  EXPECT_EQ(may_preempt(victim("project-a", "train", false),
                        preemptor("project-b", "interactive", 4, 0), *policy),
            PreemptReason::None);
}

TEST_F(DecisionTest, NoReclaimWhenThePreemptorWouldExceedItsQuota) {
  EXPECT_EQ(may_preempt(victim("project-a", "train", true), preemptor("project-b", "train", 8, 0),
                        *policy),
            PreemptReason::None);
  EXPECT_EQ(may_preempt(victim("project-a", "train", true), preemptor("project-b", "train", 2, 3),
                        *policy),
            PreemptReason::None);
  EXPECT_EQ(may_preempt(victim("project-a", "train", true), preemptor("project-b", "train", 1, 3),
                        *policy),
            PreemptReason::QuotaReclaim);
}

TEST_F(DecisionTest, NonPreemptibleClassesAreNeverVictims) {
  for (const char* c : {"inference", "build"}) {
    EXPECT_EQ(may_preempt(victim("project-a", c, true), preemptor("project-b", "inference", 1, 0),
                          *policy),
              PreemptReason::None)
        << c;
    EXPECT_EQ(may_preempt(victim("project-a", c, true), preemptor("project-a", "inference", 1, 0),
                          *policy),
              PreemptReason::None)
        << c;
  }
}

TEST_F(DecisionTest, AHigherClassPreemptsALowerOneInsideItsProjectOnly) {
  EXPECT_EQ(may_preempt(victim("project-a", "train", false),
                        preemptor("project-a", "interactive", 4, 8), *policy),
            PreemptReason::ClassInProject);
  EXPECT_EQ(may_preempt(victim("project-b", "train", false),
                        preemptor("project-a", "interactive", 4, 8), *policy),
            PreemptReason::None);
  EXPECT_EQ(may_preempt(victim("project-a", "interactive", false),
                        preemptor("project-a", "train", 4, 0), *policy),
            PreemptReason::None);
  EXPECT_EQ(may_preempt(victim("project-a", "train", false), preemptor("project-a", "train", 4, 0),
                        *policy),
            PreemptReason::None);
}

TEST_F(DecisionTest, SlurmsQosRuleStillHolds) {
  VictimView v;
  v.job_id = 1;
  v.running = true;
  v.qos_allows = true;  // standby preempted by owner, whatever the quotas say
  EXPECT_EQ(may_preempt(v, PreemptorView{}, *policy), PreemptReason::Qos);
  v.running = false;
  EXPECT_EQ(may_preempt(v, PreemptorView{}, *policy), PreemptReason::None);
}

TEST_F(DecisionTest, WithQuotasNoQosRuleTakesANonPreemptibleClass) {
  VictimView v = victim("project-a", "inference", true);
  v.qos_allows = true;  // a site QOS whose Preempt list names inference, or WITHIN
  EXPECT_EQ(may_preempt(v, preemptor("project-b", "train", 1, 0), *policy), PreemptReason::None);
  Policy no_quotas = *policy;
  no_quotas.quotas.clear();  // without quotas, preempt/qos's rule as it is
  EXPECT_EQ(may_preempt(v, preemptor(nullptr, "train", 1, 0), no_quotas), PreemptReason::Qos);
}

TEST_F(DecisionTest, WithoutQuotasAVictimTheQosDoesNotAllowIsNoVictim) {
  // preempt/quota answers these pairs before building the views: may_preempt agrees.
  Policy no_quotas = *policy;
  no_quotas.quotas.clear();
  ASSERT_TRUE(qos_alone_decides(no_quotas));
  EXPECT_FALSE(qos_alone_decides(*policy));
  for (const bool borrowing : {false, true}) {
    for (const char* vc : {"train", "interactive", "inference"}) {
      for (const char* pc : {"train", "interactive", "inference", "build"}) {
        for (const char* proj : {"project-a", "project-b"}) {
          VictimView v = victim("project-a", vc, borrowing);
          v.in_grace = borrowing;  // in a grace, claimed or not
          EXPECT_EQ(may_preempt(v, preemptor(proj, pc, 1, 0), no_quotas), PreemptReason::None)
              << vc << " by " << pc << " of " << proj;
        }
      }
    }
  }
}

TEST_F(QuotaTest, WithoutQuotasClassesChangeNeitherQueueOrderNorVictimOrder) {
  Policy no_quotas = *policy;
  no_quotas.quotas.clear();
  EXPECT_FALSE(preempts_in_queue(false, cls("interactive"), cls("train"), no_quotas));
  // preempt/quota answers the queue check from qos_alone_decides alone, with no policy at hand:
  // the two must agree for every pair of classes.
  ASSERT_TRUE(qos_alone_decides(no_quotas));
  for (int a = -1; a < static_cast<int>(no_quotas.classes.size()); ++a) {
    for (int b = -1; b < static_cast<int>(no_quotas.classes.size()); ++b) {
      EXPECT_FALSE(preempts_in_queue(false, a, b, no_quotas)) << a << " " << b;
    }
  }
  RankView train{false, cls("train"), 3600, 7, 2};
  RankView plain{false, -1, 3600, 7, 2};
  EXPECT_EQ(victim_rank(train, no_quotas), victim_rank(plain, no_quotas));
}

TEST_F(DecisionTest, AJobIsNeverItsOwnVictim) {
  VictimView v = victim("project-a", "train", true);
  PreemptorView p = preemptor("project-b", "train", 1, 0);
  v.job_id = p.job_id;
  v.qos_allows = true;
  EXPECT_EQ(may_preempt(v, p, *policy), PreemptReason::None);
}

TEST_F(DecisionTest, PreemptorsOfNoProjectOrNoClassReclaimNothing) {
  EXPECT_EQ(
      may_preempt(victim("project-a", "train", true), preemptor(nullptr, "train", 1, 0), *policy),
      PreemptReason::None);
  PreemptorView p = preemptor("project-b", "train", 1, 0);
  p.cls = -1;
  EXPECT_EQ(may_preempt(victim("project-a", "train", true), p, *policy), PreemptReason::None);
  p = preemptor("project-c", "train", 1, 0);
  p.counted = false;  // tried in a partition its quota does not count
  EXPECT_EQ(may_preempt(victim("project-a", "train", true), p, *policy), PreemptReason::None);
}

TEST_F(DecisionTest, AVictimInAnotherPreemptorsGraceIsNotTakenAgain) {
  VictimView v = victim("project-a", "train", true);
  v.in_grace = true;
  v.claimed_by = 99;
  EXPECT_EQ(may_preempt(v, preemptor("project-b", "train", 1, 0), *policy), PreemptReason::None);
  v.claimed_by = 20;  // its own preemptor keeps it
  EXPECT_EQ(may_preempt(v, preemptor("project-b", "train", 1, 0), *policy),
            PreemptReason::QuotaReclaim);
  v.claimed_by = 0;  // unknown (a restart): as Slurm would
  EXPECT_EQ(may_preempt(v, preemptor("project-b", "train", 1, 0), *policy),
            PreemptReason::QuotaReclaim);
  v.claimed_by = 99;
  v.qos_allows = true;  // the claim holds for QOS preemption too (two owners at once)
  EXPECT_EQ(may_preempt(v, preemptor("project-b", "train", 1, 0), *policy), PreemptReason::None);
}

TEST_F(QuotaTest, QueueOrderIsAntisymmetric) {
  EXPECT_TRUE(preempts_in_queue(false, cls("interactive"), cls("train"), *policy));
  EXPECT_FALSE(preempts_in_queue(false, cls("train"), cls("interactive"), *policy));
  EXPECT_FALSE(preempts_in_queue(false, cls("inference"), cls("build"), *policy));
  EXPECT_FALSE(preempts_in_queue(false, cls("train"), cls("train"), *policy));
  EXPECT_TRUE(preempts_in_queue(true, -1, -1, *policy));
}

TEST_F(QuotaTest, QueueClassesAnswerAsPreemptsInQueueForEveryPairAndKeepTheirAnswers) {
  const QueueClasses q(policy);
  EXPECT_FALSE(q.qos_alone());
  const char* const names[] = {"inference", "build", "interactive", "train", "normal", ""};
  for (int round = 0; round < 2; ++round) {  // the first round looks classes up, the second reads
    for (uint32_t a = 0; a < 6; ++a) {
      for (uint32_t b = 0; b < 6; ++b) {
        const int ca = cls(names[a]);
        const int cb = cls(names[b]);
        EXPECT_EQ(q.preempts(a + 1, names[a], b + 1, names[b]),
                  preempts_in_queue(false, ca, cb, *policy))
            << names[a] << " " << names[b] << " round " << round;
      }
    }
  }
  EXPECT_EQ(q.class_of(3, "interactive"), cls("interactive"));
  // An id keeps the class it was first seen with: the name is read only at the first look-up.
  EXPECT_EQ(q.class_of(3, "train"), cls("interactive"));
  EXPECT_EQ(q.class_of(5, "normal"), -1);
  EXPECT_EQ(q.class_of(5, "train"), -1);
  EXPECT_EQ(q.class_of(9, nullptr), -1);  // a QOS without a name has no class
  // Ids past the cache are looked up by name every time.
  const auto big = static_cast<uint32_t>(QueueClasses::kCachedQos);
  EXPECT_EQ(q.class_of(big, "train"), cls("train"));
  EXPECT_EQ(q.class_of(big, "build"), cls("build"));
  EXPECT_TRUE(q.preempts(big + 7, "interactive", big, "train"));
}

TEST_F(QuotaTest, QueueClassesWithoutQuotasOrPolicyLeaveTheOrderToTheQosRules) {
  auto no_quotas = std::make_shared<Policy>(*policy);
  no_quotas->quotas.clear();
  const QueueClasses q(no_quotas);
  EXPECT_TRUE(q.qos_alone());
  EXPECT_FALSE(q.preempts(1, "interactive", 2, "train"));
  const QueueClasses none(nullptr);
  EXPECT_TRUE(none.qos_alone());
  EXPECT_EQ(none.class_of(1, "train"), -1);
  EXPECT_FALSE(none.preempts(1, "interactive", 2, "train"));
}

TEST_F(QuotaTest, QueueOrderPublishesTheLatestAndRetiresOnlyTheReplacedOnes) {
  QueueOrder order;
  EXPECT_EQ(order.current(), nullptr);
  EXPECT_EQ(order.retire_unused(), 0u);
  order.set(policy);
  const QueueClasses* first = order.current();
  ASSERT_NE(first, nullptr);
  EXPECT_FALSE(first->qos_alone());
  auto no_quotas = std::make_shared<Policy>(*policy);
  no_quotas->quotas.clear();
  order.set(no_quotas);
  const QueueClasses* second = order.current();
  ASSERT_NE(second, nullptr);
  EXPECT_NE(second, first);
  EXPECT_TRUE(second->qos_alone());
  // The first is still readable until retired: a reader may hold it.
  EXPECT_EQ(order.kept(), 2u);
  EXPECT_FALSE(first->qos_alone());
  EXPECT_EQ(order.retire_unused(), 1u);
  EXPECT_EQ(order.kept(), 1u);
  EXPECT_EQ(order.current(), second);
  EXPECT_EQ(order.retire_unused(), 0u);
}

TEST_F(QuotaTest, RankTakesGraceThenLowestClassThenYoungestThenTooYoung) {
  RankView grace;
  grace.in_grace = true;
  RankView old_train{false, cls("train"), 3600, 0, 1};
  RankView new_train{false, cls("train"), 700, 0, 1};
  RankView too_young{false, cls("train"), 30, 0, 1};  // under train's min_runtime (10 min)
  RankView interactive{false, cls("interactive"), 5, 0, 1};
  EXPECT_EQ(victim_rank(grace, *policy), 0u);
  EXPECT_LT(victim_rank(new_train, *policy), victim_rank(old_train, *policy));
  EXPECT_LT(victim_rank(old_train, *policy), victim_rank(interactive, *policy));
  EXPECT_LT(victim_rank(interactive, *policy), victim_rank(too_young, *policy));
  // Not a class: preempt/qos's rank, QOS priority then node count, never 0.
  RankView standby{false, -1, 0, 0, 0};
  RankView standby_big{false, -1, 0, 0, 4};
  RankView high{false, -1, 0, 10, 1};
  EXPECT_GT(victim_rank(standby, *policy), 0u);
  EXPECT_LT(victim_rank(standby, *policy), victim_rank(standby_big, *policy));
  EXPECT_LT(victim_rank(standby_big, *policy), victim_rank(high, *policy));
  RankView huge{false, -1, 0, UINT32_MAX, UINT32_MAX};
  EXPECT_EQ(victim_rank(huge, *policy), UINT32_MAX);
}

TEST_F(QuotaTest, AStarvingJobIsTakenLastUnlessItIsInAGraceAlready) {
  Policy no_quotas = *policy;
  no_quotas.quotas.clear();
  for (const Policy* p : {policy.get(), static_cast<const Policy*>(&no_quotas)}) {
    RankView starving{false, cls("train"), 3600, 0, 1, true};
    RankView too_young{false, cls("train"), 30, 0, 1};
    RankView high{false, -1, 0, 10, 1};
    EXPECT_EQ(victim_rank(starving, *p), kStarvingRank);
    EXPECT_LT(victim_rank(too_young, *p), victim_rank(starving, *p));
    EXPECT_LT(victim_rank(high, *p), victim_rank(starving, *p));
    starving.in_grace = true;  // its own preemptor keeps waiting for it
    EXPECT_EQ(victim_rank(starving, *p), 0u);
  }
}

std::string story_of(std::initializer_list<int64_t> preempted_at) {
  std::string s = "jobstats {\"gpu\": 0.9} slurm-preempt: checkpoint USR1 grace 60s;";
  JobCheckpoint c;
  c.signal = 10;
  c.grace_s = 60;
  for (const int64_t t : preempted_at) {
    s += " slurm-preempt: " + note_preempted(t, 7, "owner", "chem", c) + ";";
    s += " slurm-preempt: " + note_exited_in_grace(t + 5, 0, true, 1) + ";";
  }
  return s;
}

TEST(Starvation, OffByDefaultAndForAJobNeverPreempted) {
  constexpr int64_t kT = 1'795'000'000;
  EXPECT_EQ(starvation_of(story_of({kT, kT + 10, kT + 20}), kT + 30, StarvationPolicy{}),
            Starvation{});
  const StarvationPolicy on{3, 3600, 600};
  EXPECT_EQ(starvation_of("", kT, on), Starvation{});
  EXPECT_EQ(starvation_of(story_of({}), kT, on), Starvation{});
}

TEST(Starvation, TheNthPreemptionWithinTheWindowProtectsForProtectFor) {
  constexpr int64_t kT = 1'795'000'000;
  const StarvationPolicy on{3, 3600, 600};
  Starvation s = starvation_of(story_of({kT, kT + 100}), kT + 200, on);
  EXPECT_EQ(s.recent, 2u);
  EXPECT_EQ(s.last, kT + 100);
  EXPECT_FALSE(s.protected_);
  s = starvation_of(story_of({kT, kT + 100, kT + 200}), kT + 300, on);
  EXPECT_EQ(s, (Starvation{3, kT + 200, kT + 800, true}));
  EXPECT_FALSE(starvation_of(story_of({kT, kT + 100, kT + 200}), kT + 800, on).protected_);
  // The first is outside the window that ends at the last: two recent ones only.
  s = starvation_of(story_of({kT, kT + 3000, kT + 3601}), kT + 3700, on);
  EXPECT_EQ(s.recent, 2u);
  EXPECT_FALSE(s.protected_);
  EXPECT_EQ(note_protected(Starvation{3, kT + 200, kT + 800, true}, on),
            "protected from preemption until 2026-11-18T11:20:00Z: preempted 3 times within "
            "3600 s, taken as a victim last");
}

TEST(Starvation, OnePreemptionNotedTwiceCountsOnceAndGarbleCountsNothing) {
  constexpr int64_t kT = 1'795'000'000;
  const StarvationPolicy on{2, 3600, 600};
  EXPECT_EQ(starvation_of(story_of({kT, kT}), kT + 10, on).recent, 1u);
  EXPECT_EQ(starvation_of("slurm-preempt: preempted at yesterday by JobId=3;", kT, on),
            Starvation{});
  EXPECT_EQ(starvation_of("slurm-preempt: preempted at 2026-11-18T11", kT, on), Starvation{});
}

TEST(ClaimTracker, TheLastPreemptorThatSawAnUntouchedVictimOwnsItsGrace) {
  constexpr int64_t kRun = 1'795'000'000;  // the victims' runs' start
  ClaimTracker t;
  EXPECT_EQ(t.observe(5, kRun, false, 100), 0u);   // sweep for 100: candidate
  EXPECT_EQ(t.observe(5, kRun, false, 101), 0u);   // sweep for 101: candidate, and 101 preempts it
  EXPECT_EQ(t.observe(5, kRun, true, 100), 101u);  // later sweeps see it in a grace: 101's
  EXPECT_EQ(t.observe(5, kRun, true, 102), 101u);
  EXPECT_EQ(t.claim_of(5), 101u);
  EXPECT_EQ(t.observe(6, kRun, true, 100), 0u);        // in a grace we never saw start: anyone's
  EXPECT_EQ(t.observe(5, kRun + 60, false, 103), 0u);  // requeued and running again: a new run
  EXPECT_EQ(t.claim_of(5), 0u);
  t.observe(7, kRun, false, 100);
  t.retain_if([](uint32_t id) { return id != 7; });  // 7 no longer runs: its entry goes
  EXPECT_EQ(t.size(), 1u);                           // 5 is kept
  EXPECT_EQ(t.observe(7, kRun, true, 101), 0u);
  t.retain({});
  EXPECT_EQ(t.size(), 0u);
}

TEST(ClaimTracker, WhatAnEarlierRunWasSeenAsNeverClaimsTheNextRunsGrace) {
  constexpr int64_t kRun = 1'795'000'000;
  ClaimTracker t;
  t.observe(5, kRun, false, 100);  // run 1: seen untouched by 100 (never pruned since)
  // Requeued, started again and put in a grace before any sweep saw the new run untouched:
  EXPECT_EQ(t.observe(5, kRun + 60, true, 102), 0u);  // anyone's, not 100's
  EXPECT_EQ(t.claim_of(5), 0u);
  EXPECT_EQ(t.size(), 0u);  // the old run's entry went
  t.observe(5, kRun + 60, false, 103);
  EXPECT_EQ(t.observe(5, kRun + 60, true, 102), 103u);  // the new run's own sighting claims
}

TEST(ClaimTracker, APruneIsDueOnlyOnceTheEntriesDoubledSinceTheLast) {
  ClaimTracker t;
  EXPECT_FALSE(t.prune_due());
  for (uint32_t id = 1; id <= ClaimTracker::kPruneSlack; ++id) t.observe(id, 1, false, 100);
  EXPECT_FALSE(t.prune_due());  // 64 entries: within the slack
  t.observe(ClaimTracker::kPruneSlack + 1, 1, false, 100);
  EXPECT_TRUE(t.prune_due());
  t.retain_if([](uint32_t) { return true; });  // all still run: 65 kept
  EXPECT_FALSE(t.prune_due());
  for (uint32_t id = 66; id <= 2 * 65 + ClaimTracker::kPruneSlack; ++id)
    t.observe(id, 1, false, 100);
  EXPECT_FALSE(t.prune_due());  // 194 = 2 * 65 + 64
  t.observe(1000, 1, false, 100);
  EXPECT_TRUE(t.prune_due());
  t.retain({});
  EXPECT_EQ(t.size(), 0u);
  EXPECT_FALSE(t.prune_due());
}

TEST_F(QuotaTest, QuotaLinesReportUseBorrowingAndPending) {
  std::vector<ListedJob> jobs = {
      {1, "project-a", "pool", "train", true, 8, 100},
      {2, "project-b", "pool", "interactive", false, 4, 0},
      {3, "project-c", "other", "train", true, 4, 100},  // outside its pool
      {4, "project-c", "pool,other", "inference", false, 2, 0},
      {5, "nobody", "pool", "train", true, 4, 100},
  };
  const auto lines = quota_lines(*policy, jobs);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].project, "project-a");
  EXPECT_EQ(lines[0].pool, "*");
  EXPECT_EQ(lines[0].used, 8u);
  EXPECT_EQ(lines[0].borrowed, 4u);
  EXPECT_EQ(lines[1].pending, 4u);
  EXPECT_EQ(lines[1].limit, 8);
  EXPECT_EQ(lines[2].pool, "pool");
  EXPECT_EQ(lines[2].used, 0u);
  EXPECT_EQ(lines[2].pending, 2u);
}

// ---- fair division of idle GPUs (over_quota_weight) ----------------------------------------

const char* const kFairPolicy = R"(
classes:
  train: {priority: 50, preemptible: true}
  interactive: {priority: 75, preemptible: true}
quotas:
  project-a: {gpus: 0, over_quota_weight: 3}
  project-b: {gpus: 0, over_quota_weight: 1}
  project-c: {gpus: 4}
  project-d: {gpus: 0, over_quota_weight: 0}
)";

class FairDivision : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = load_policy_text(kFairPolicy, "fair.yaml");
    if (const auto* e = error_of(r)) FAIL() << e->str();
    policy = policy_of(r);
  }
  int project(const char* name) const { return policy->quota_index(name); }
  const Quota& quota(const char* name) const {
    return policy->quotas[static_cast<std::size_t>(project(name))];
  }
  std::shared_ptr<const Policy> policy;
};

TEST_F(FairDivision, WithinQuotaTheKeyIsZeroAndTheFactorFull) {
  EXPECT_EQ(over_quota_key(quota("project-c"), 0, 4), 0.0);
  EXPECT_EQ(over_quota_key(quota("project-c"), 2, 2), 0.0);
  EXPECT_EQ(over_quota_factor(0.0), 1.0);
}

TEST_F(FairDivision, TheKeyIsWhatTheProjectWouldBorrowOverItsWeight) {
  EXPECT_DOUBLE_EQ(over_quota_key(quota("project-c"), 4, 2), 2.0);  // weight 1 by default
  EXPECT_DOUBLE_EQ(over_quota_key(quota("project-c"), 3, 2), 1.0);  // straddles the quota
  EXPECT_DOUBLE_EQ(over_quota_key(quota("project-a"), 2, 2), 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(over_quota_factor(1.0), 0.5);
  EXPECT_GT(over_quota_factor(1.0), over_quota_factor(1.5));  // strictly decreasing
}

TEST_F(FairDivision, WeightZeroBorrowsAfterEveryoneElse) {
  EXPECT_EQ(over_quota_key(quota("project-d"), 0, 0), 0.0);
  EXPECT_TRUE(std::isinf(over_quota_key(quota("project-d"), 0, 1)));
  EXPECT_EQ(over_quota_factor(over_quota_key(quota("project-d"), 0, 1)), 0.0);
  EXPECT_EQ(over_quota_factor(std::nan("")), 1.0);  // a bad key never lowers a job
}

// Two projects, weights 3 and 1, each with eight 2-GPU jobs pending on an idle pool of 8 GPUs
// (4 slots): in key order, project-a gets three slots for project-b's one.
TEST_F(FairDivision, KeysInterleaveProjectsInProportionToTheirWeights) {
  std::vector<PendingQuotaJob> jobs;
  for (uint32_t i = 0; i < 8; ++i) jobs.push_back({100 + i, project("project-b"), 2, 0});
  for (uint32_t i = 0; i < 8; ++i) jobs.push_back({200 + i, project("project-a"), 2, 0});
  const auto counted = assign_over_quota_keys(*policy, {}, jobs);
  EXPECT_EQ(counted[static_cast<std::size_t>(project("project-a"))], 16u);
  EXPECT_EQ(counted[static_cast<std::size_t>(project("project-b"))], 16u);
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const auto& x, const auto& y) { return x.key < y.key; });
  int a = 0, b = 0;
  for (std::size_t i = 0; i < 4; ++i) (jobs[i].project == project("project-a") ? a : b)++;
  EXPECT_EQ(a, 3);
  EXPECT_EQ(b, 1);
  // Within a project, submission order.
  EXPECT_LT(jobs[0].job_id, jobs[1].job_id);
}

TEST_F(FairDivision, RunningGpusComeFirstAndJobsOfNoProjectKeepKeyZero) {
  std::vector<uint64_t> used(policy->quotas.size(), 0);
  used[static_cast<std::size_t>(project("project-c"))] = 4;  // its whole quota runs
  std::vector<PendingQuotaJob> jobs = {{7, project("project-c"), 1, 0}, {8, -1, 4, 0}};
  const auto counted = assign_over_quota_keys(*policy, used, jobs);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].job_id, 8u);  // project -1 sorts first
  EXPECT_EQ(jobs[0].key, 0.0);
  EXPECT_DOUBLE_EQ(jobs[1].key, 1.0);
  EXPECT_EQ(counted[static_cast<std::size_t>(project("project-c"))], 5u);
}

TEST_F(FairDivision, TheLedgerKeepsThePassKeysAndContinuesFromItsCounts) {
  std::vector<PendingQuotaJob> jobs = {{10, project("project-b"), 2, 0}};
  auto counted = assign_over_quota_keys(*policy, {}, jobs);
  OverQuotaLedger ledger;
  ledger.reset(policy, counted, jobs);
  EXPECT_DOUBLE_EQ(ledger.key(policy, 10, project("project-b"), 2), 2.0);  // the pass' key
  EXPECT_DOUBLE_EQ(ledger.key(policy, 11, project("project-b"), 2), 4.0);  // after job 10
  EXPECT_DOUBLE_EQ(ledger.key(policy, 11, project("project-b"), 2), 4.0);  // asked again: same
  EXPECT_EQ(ledger.key(policy, 12, -1, 2), 0.0);                           // no project
  EXPECT_EQ(ledger.size(), 2u);
  // Another policy (a reconfigure): the old keys and counts no longer apply.
  auto other = std::make_shared<Policy>(*policy);
  EXPECT_DOUBLE_EQ(ledger.key(other, 11, project("project-b"), 2), 2.0);
  EXPECT_EQ(ledger.key(nullptr, 11, 0, 2), 0.0);
}

TEST(QuotaIndex, FindsEveryProjectIgnoringCaseAmongAThousand) {
  std::string text = "quotas:\n  Mixed-Case: {gpus: 1}\n";
  for (int i = 0; i < 1000; ++i) text += "  p" + std::to_string(i) + ": {gpus: 1}\n";
  auto r = load_policy_text(
      text + "classes:\n  train: {priority: 1}\n  interactive: {priority: 2}\n", "many.yaml");
  if (const auto* e = error_of(r)) FAIL() << e->str();
  auto p = policy_of(r);
  for (int i = 0; i < 1000; ++i) {
    const std::string name = "p" + std::to_string(i);
    const int at = p->quota_index(name);
    ASSERT_GE(at, 0) << name;
    EXPECT_EQ(p->quotas[static_cast<std::size_t>(at)].account, name);
  }
  EXPECT_EQ(p->quota_index("P500"), p->quota_index("p500"));
  EXPECT_EQ(p->quotas[static_cast<std::size_t>(p->quota_index("mixed-CASE"))].account,
            "Mixed-Case");
  EXPECT_EQ(p->quota_index("p1000"), -1);
  EXPECT_EQ(p->quota_index(""), -1);
  Policy unfinalized = *p;  // quotas added after finalize(): found by a linear scan
  Quota late;
  late.account = "late";
  unfinalized.quotas.push_back(late);
  EXPECT_EQ(unfinalized.quota_index("LATE"), 1001);
}

constexpr uint64_t kSubmitThread = 11;
constexpr uint64_t kSchedThread = 22;

TEST(PassRequests, AFirstSightingWaitsTheDelayThenIsDueOnce) {
  PassRequests p(500);
  EXPECT_EQ(p.next_due_ms(0), -1);  // nothing waits
  EXPECT_EQ(p.sighted(7, 3, PreemptReason::Qos, kSubmitThread, 1000), PassRequests::Seen::First);
  EXPECT_EQ(p.waiting(), 1u);
  EXPECT_EQ(p.next_due_ms(1200), 300);
  EXPECT_TRUE(p.take_due(1499).empty());
  const auto due = p.take_due(1500);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].preemptor, 7u);
  EXPECT_EQ(due[0].victim, 3u);
  EXPECT_EQ(due[0].reason, PreemptReason::Qos);
  EXPECT_EQ(p.waiting(), 0u);
  EXPECT_TRUE(p.take_due(5000).empty());  // asked once
  // Seen again later, by any thread: never a second pass.
  EXPECT_EQ(p.sighted(7, 3, PreemptReason::Qos, kSchedThread, 6000), PassRequests::Seen::Again);
  EXPECT_EQ(p.next_due_ms(6000), -1);
}

TEST(PassRequests, ASweepOfAnotherThreadWithinTheDelaySettlesItWithNoPass) {
  PassRequests p(500);
  ASSERT_EQ(p.sighted(7, 3, PreemptReason::QuotaReclaim, kSubmitThread, 1000),
            PassRequests::Seen::First);
  // The submitting thread's own later sweeps (a second test of the same submission) do not.
  EXPECT_EQ(p.sighted(7, 3, PreemptReason::QuotaReclaim, kSubmitThread, 1100),
            PassRequests::Seen::Again);
  PassRequests::Waiting settled;
  EXPECT_EQ(p.sighted(7, 4, PreemptReason::QuotaReclaim, kSchedThread, 1200, &settled),
            PassRequests::Seen::Tested);
  EXPECT_EQ(settled.preemptor, 7u);
  EXPECT_EQ(settled.victim, 3u);
  EXPECT_TRUE(p.take_due(10000).empty());
  EXPECT_EQ(p.sighted(7, 4, PreemptReason::QuotaReclaim, kSubmitThread, 10000),
            PassRequests::Seen::Again);
}

TEST(PassRequests, AGraceStartedForItSettlesItWithNoPass) {
  PassRequests p(500);
  EXPECT_FALSE(p.settle(7).has_value());  // not waiting: nothing to settle
  ASSERT_EQ(p.sighted(7, 3, PreemptReason::Qos, kSchedThread, 1000), PassRequests::Seen::First);
  const auto settled = p.settle(7);
  ASSERT_TRUE(settled.has_value());
  EXPECT_EQ(settled->victim, 3u);
  EXPECT_TRUE(p.take_due(10000).empty());
  EXPECT_FALSE(p.settle(7).has_value());
}

TEST(PassRequests, DueOnesComeOldestFirstAndTheNextDueIsTheEarliest) {
  PassRequests p(500);
  ASSERT_EQ(p.sighted(9, 1, PreemptReason::Qos, kSubmitThread, 1200), PassRequests::Seen::First);
  ASSERT_EQ(p.sighted(8, 1, PreemptReason::Qos, kSubmitThread, 1000), PassRequests::Seen::First);
  ASSERT_EQ(p.sighted(5, 1, PreemptReason::Qos, kSubmitThread, 1900), PassRequests::Seen::First);
  EXPECT_EQ(p.next_due_ms(1000), 500);
  EXPECT_EQ(p.next_due_ms(1600), 0);  // overdue
  const auto due = p.take_due(1700);
  ASSERT_EQ(due.size(), 2u);
  EXPECT_EQ(due[0].preemptor, 8u);
  EXPECT_EQ(due[1].preemptor, 9u);
  EXPECT_EQ(p.next_due_ms(1700), 700);
  EXPECT_EQ(p.sighted(0, 1, PreemptReason::Qos, kSubmitThread, 1700), PassRequests::Seen::Again);
}

TEST(PassRequests, KeepsOnlyTheLastPreemptorsSoItsMemoryIsBounded) {
  PassRequests p(500, 3);
  for (uint32_t id = 1; id <= 5; ++id) {
    EXPECT_EQ(p.sighted(id, 100, PreemptReason::Qos, kSubmitThread, 0), PassRequests::Seen::First);
  }
  EXPECT_EQ(p.remembered(), 3u);
  EXPECT_EQ(p.take_due(500).size(), 5u);  // forgotten ones still get their pass
  EXPECT_EQ(p.sighted(5, 100, PreemptReason::Qos, kSubmitThread, 600), PassRequests::Seen::Again);
  EXPECT_EQ(p.sighted(1, 100, PreemptReason::Qos, kSubmitThread, 600),
            PassRequests::Seen::First);  // forgotten: one more pass, no more
  EXPECT_EQ(p.remembered(), 3u);
  PassRequests none(500, 0);
  EXPECT_EQ(none.sighted(1, 100, PreemptReason::Qos, kSubmitThread, 0), PassRequests::Seen::Again);
}

}  // namespace
}  // namespace sp
