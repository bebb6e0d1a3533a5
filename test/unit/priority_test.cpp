#include "priority.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace sp {
namespace {

TEST(FifoPriority, EachNewJobRanksBelowThePreviousOne) {
  EXPECT_EQ(fifo_priority(100, 0), 99u);
  EXPECT_EQ(fifo_priority(2, 0), 1u);
}

TEST(FifoPriority, NeverReturnsZeroWhichWouldHoldTheJob) {
  EXPECT_EQ(fifo_priority(1, 0), 1u);
  EXPECT_EQ(fifo_priority(0, 0), 1u);
}

TEST(FifoPriority, APositiveNiceThatWouldReachTheFloorIsIgnoredLikePriorityBasic) {
  EXPECT_EQ(fifo_priority(10, 50), 9u);
  EXPECT_EQ(fifo_priority(10, 8), 9u);  // 9 - 8 = 1 is not above nice + 1: unchanged
  EXPECT_EQ(fifo_priority(20, 8), 11u);
}

TEST(FifoPriority, NiceShiftsThePriority) {
  EXPECT_EQ(fifo_priority(1000, 100), 899u);    // nicer job: lower
  EXPECT_EQ(fifo_priority(1000, -100), 1099u);  // negative nice (admin): higher
}

TEST(FairshareFactor, IsTwoToTheMinusUsageOverShares) {
  EXPECT_DOUBLE_EQ(fairshare_factor(0.0L, 0.5L), 1.0);
  EXPECT_DOUBLE_EQ(fairshare_factor(0.5L, 0.5L), 0.5);
  EXPECT_DOUBLE_EQ(fairshare_factor(1.0L, 0.5L), 0.25);
}

TEST(FairshareFactor, ZeroOrUnknownSharesGiveZero) {
  EXPECT_EQ(fairshare_factor(0.3L, 0.0L), 0.0);
  EXPECT_EQ(fairshare_factor(0.3L, -1.0L), 0.0);
  EXPECT_EQ(fairshare_factor(0.3L, static_cast<long double>(NAN)), 0.0);
}

}  // namespace
}  // namespace sp

namespace sp {
namespace {

TEST(EffectiveWeights, SlurmConfWinsWhereSetPolicyElsewhere) {
  PriorityWeights policy;  // defaults: age 1000, fairshare 10000, qos 1000, ...
  SlurmWeights slurm;
  slurm.age = 5;
  slurm.max_age_s = 3600;
  const Weights w = effective_weights(policy, slurm);
  EXPECT_EQ(w.age, 5u);
  EXPECT_EQ(w.fairshare, policy.fairshare);
  EXPECT_EQ(w.qos, policy.qos);
  EXPECT_EQ(w.max_age_s, 3600);
  EXPECT_EQ(w.priority_class, policy.priority_class);
}

TEST(EffectiveWeights, AZeroInSlurmConfTurnsTheFactorOff) {
  PriorityWeights policy;
  SlurmWeights slurm;
  slurm.age = 0;
  slurm.fairshare = 0;
  slurm.qos = 0;
  slurm.partition = 0;
  slurm.job_size = 0;
  const Weights w = effective_weights(policy, slurm);
  EXPECT_EQ(w.age, 0u);
  EXPECT_EQ(w.fairshare, 0u);
  EXPECT_EQ(w.qos, 0u);
  EXPECT_EQ(w.partition, 0u);
  EXPECT_EQ(w.job_size, 0u);
  EXPECT_EQ(w.priority_class, policy.priority_class);  // not a slurm.conf weight
  // And the age term is then 0 however old the job is.
  PriorityInput in;
  in.accrue_time = 1000;
  EXPECT_DOUBLE_EQ(priority_terms(in, w, 1000 + w.max_age_s).age, 0.0);
}

TEST(EffectiveWeights, AnUnsetKeyLeavesThePolicyWeight) {
  PriorityWeights policy;
  policy.age = 777;
  const Weights w = effective_weights(policy, SlurmWeights{});
  EXPECT_EQ(w.age, 777u);
  EXPECT_EQ(w.fairshare, policy.fairshare);
  EXPECT_EQ(w.job_size, policy.job_size);
}

TEST(PriorityTerms, AgeGrowsFromTheAccrueTimeUpToMaxAge) {
  Weights w;
  w.age = 1000;
  w.max_age_s = 1000;
  PriorityInput in;
  in.accrue_time = 5000;
  EXPECT_DOUBLE_EQ(priority_terms(in, w, 5500).age, 500.0);
  EXPECT_DOUBLE_EQ(priority_terms(in, w, 9000).age, 1000.0);
  EXPECT_DOUBLE_EQ(priority_terms(in, w, 4000).age, 0.0);  // clock behind: no negative age
  in.accrue_time = 0;  // not accruing (held, or requeued and not yet eligible)
  EXPECT_DOUBLE_EQ(priority_terms(in, w, 9000).age, 0.0);
}

TEST(PriorityTerms, AgeIsRoundedUpSoAJobThatHasWaitedOutranksANewOne) {
  // PriorityWeightAge=1000 over PriorityMaxAge=7 days: one second is 0.0017 of a point, so a
  // rounded term would keep a job that has waited for minutes tied with one just submitted.
  Weights w;
  w.age = 1000;
  w.max_age_s = 7 * 24 * 3600;
  w.fairshare = 1000;
  PriorityInput waited;
  waited.accrue_time = 100000;
  waited.fairshare = 0.5;
  PriorityInput fresh = waited;
  fresh.accrue_time = 100060;
  EXPECT_DOUBLE_EQ(priority_terms(waited, w, 100060).age, 1.0);
  EXPECT_DOUBLE_EQ(priority_terms(fresh, w, 100060).age, 0.0);
  EXPECT_GT(priority_value(priority_terms(waited, w, 100060)),
            priority_value(priority_terms(fresh, w, 100060)));
  // Exact multiples are not rounded further: half of max age is half of the weight.
  EXPECT_DOUBLE_EQ(priority_terms(waited, w, 100000 + w.max_age_s / 2).age, 500.0);
}

TEST(PriorityTerms, AgeNeverOverflowsWithTheLargestWeightAndMaxAge) {
  Weights w;
  w.age = UINT32_MAX;
  w.max_age_s = INT64_MAX / 2;
  PriorityInput in;
  in.accrue_time = 1;
  EXPECT_DOUBLE_EQ(priority_terms(in, w, INT64_MAX).age, static_cast<double>(UINT32_MAX));
  EXPECT_DOUBLE_EQ(priority_terms(in, w, 2).age, 1.0);  // one second: rounded up to a point
}

TEST(PriorityTerms, TheBoostAddsExactlyItsValue) {
  Weights w;
  w.age = 1000;
  w.qos = 1000;
  w.max_age_s = 100;
  PriorityInput normal;
  normal.accrue_time = 50;
  normal.qos_norm = 0.5;
  PriorityInput standby = normal;
  standby.boost = 1000;
  const uint32_t a = priority_value(priority_terms(normal, w, 100));
  const uint32_t b = priority_value(priority_terms(standby, w, 100));
  EXPECT_EQ(b - a, 1000u);
}

TEST(PriorityTerms, FactorsOutsideZeroToOneAreClamped) {
  Weights w;
  w.qos = 100;
  w.partition = 100;
  w.fairshare = 100;
  PriorityInput in;
  in.qos_norm = 7.0;
  in.partition_norm = -3.0;
  in.fairshare = NAN;
  const PriorityTerms t = priority_terms(in, w, 0);
  EXPECT_DOUBLE_EQ(t.qos, 100.0);
  EXPECT_DOUBLE_EQ(t.partition, 0.0);
  EXPECT_DOUBLE_EQ(t.fairshare, 0.0);
}

TEST(PriorityValue, IsNeverZeroAndNeverOverflows) {
  PriorityTerms t;
  EXPECT_EQ(priority_value(t), 1u);
  t.nice = 10000;
  t.site = 5;
  EXPECT_EQ(priority_value(t), 1u);
  t = PriorityTerms{};
  t.fairshare = 4e9;
  t.age = 4e9;
  EXPECT_EQ(priority_value(t), UINT32_MAX - 1);
  t = PriorityTerms{};
  t.age = 10.4;
  t.site = 1000;
  t.nice = -5;
  EXPECT_EQ(priority_value(t), 1015u);
}

TEST(BoostForQos, ComesFromThePolicyRule) {
  const Policy p = default_policy();
  EXPECT_EQ(boost_for_qos(p, "standby"), 1000u);
  EXPECT_EQ(boost_for_qos(p, "normal"), 0u);
  EXPECT_EQ(boost_for_qos(p, "unknown"), 0u);
}

TEST(RunSecs, PassesGiveBackWhatRanAndTheEndTheRestSoTheWholeReservationReturns) {
  const RunSecsJob job{1000, 600, -1};  // 10 minutes from t=1000
  uint64_t total = 0;
  // Passes at 1100 (last pass before the start at 900), 1300 and 1450, then the job ends.
  EXPECT_EQ(run_secs_to_release(job, 900, 1100, false), 100u);
  total += run_secs_to_release(job, 900, 1100, false);
  EXPECT_EQ(run_secs_to_release(job, 1100, 1300, false), 200u);
  total += run_secs_to_release(job, 1100, 1300, false);
  total += run_secs_to_release(job, 1300, 1450, false);
  EXPECT_EQ(run_secs_to_release(job, 1450, 1460, true), 150u);  // ended at 1460: the rest
  total += run_secs_to_release(job, 1450, 1460, true);
  EXPECT_EQ(total, 600u);  // exactly the time limit Slurm reserved
}

TEST(RunSecs, NothingBeyondTheTimeLimit) {
  const RunSecsJob job{1000, 600, -1};
  EXPECT_EQ(run_secs_to_release(job, 1500, 1700, false), 100u);  // only up to 1600
  EXPECT_EQ(run_secs_to_release(job, 1700, 1900, false), 0u);    // running over time
  EXPECT_EQ(run_secs_to_release(job, 1700, 1900, true), 0u);
  EXPECT_EQ(run_secs_to_release(job, 1200, 1100, false), 0u);  // clock went back
}

TEST(RunSecs, TheUsageFactorScalesAsSlurmsReservationDoes) {
  EXPECT_EQ(run_secs_to_release({1000, 600, 0.5}, 1000, 1101, false), 50u);  // truncated
  EXPECT_EQ(run_secs_to_release({1000, 600, 0.5}, 1000, 1000, true), 300u);
  EXPECT_EQ(run_secs_to_release({1000, 600, 0.0}, 1000, 1300, false), 0u);
  EXPECT_EQ(run_secs_to_release({1000, 600, 2.0}, 1000, 1300, false), 600u);
}

TEST(RunSecs, AfterARestartWhatRanUpToTheLastPassComesBackAtOnce) {
  // Slurm reserved the whole limit again at the restart; the last pass was at 1400.
  const RunSecsJob job{1000, 600, -1};
  const uint64_t resync = run_secs_to_release(job, job.start, 1400, false);
  EXPECT_EQ(resync, 400u);
  EXPECT_EQ(resync + run_secs_to_release(job, 1400, 1500, false) +
                run_secs_to_release(job, 1500, 1500, true),
            600u);
}

TEST(PriorityTerms, SiteAddsTheClassShareAndTheOverQuotaShare) {
  Weights w;
  w.priority_class = 1000;
  w.over_quota = 10000;
  PriorityInput in;
  in.boost = 7;
  in.class_norm = 0.5;
  in.over_quota = 0.25;
  EXPECT_DOUBLE_EQ(priority_terms(in, w, 0).site, 7 + 500 + 2500);
  in.over_quota = 3.0;  // clamped
  EXPECT_DOUBLE_EQ(priority_terms(in, w, 0).site, 7 + 500 + 10000);
}

TEST(PolicyWeights, TheOverQuotaWeightAppliesOnlyWithQuotas) {
  Policy p = default_policy();
  EXPECT_EQ(policy_weights(p, {}).over_quota, 0u);
  p.quotas.push_back(Quota{});
  EXPECT_EQ(policy_weights(p, {}).over_quota, p.priority.over_quota);
  EXPECT_EQ(p.priority.over_quota, 10000u);
}

TEST(ClassNorm, IsTheClassPriorityOverTheHighest) {
  Policy p = default_policy();
  p.classes = {{"inference", 125, false, -1, 0}, {"train", 50, true, -1, 0}};
  EXPECT_DOUBLE_EQ(class_norm(p, "inference"), 1.0);
  EXPECT_DOUBLE_EQ(class_norm(p, "TRAIN"), 0.4);  // Slurm's QOS names ignore case
  EXPECT_DOUBLE_EQ(class_norm(p, "standby"), 0.0);
  p.classes = {{"zero", 0, true, -1, 0}};
  EXPECT_DOUBLE_EQ(class_norm(p, "zero"), 0.0);
}

}  // namespace
}  // namespace sp

namespace sp {
namespace {

TEST(PriorityInPartition, OnlyThePartitionTermChanges) {
  Weights w;
  w.partition = 1000;
  PriorityTerms t;
  t.age = 10;
  t.partition = 999;  // replaced
  t.site = 5;
  t.nice = 2;
  EXPECT_EQ(priority_in_partition(t, 0.5, w), 10u + 500 + 5 - 2);
  EXPECT_EQ(priority_in_partition(t, 7.0, w), 10u + 1000 + 5 - 2);  // clamped to [0, 1]
  EXPECT_EQ(priority_in_partition(PriorityTerms{}, 0.0, w), 1u);    // never 0: that is a hold
}

}  // namespace
}  // namespace sp
