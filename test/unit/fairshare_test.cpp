#include "fairshare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "priority.hpp"

namespace sp {
namespace {

FsNode node(uint32_t id, int32_t parent, uint32_t shares, long double usage, bool user = false) {
  FsNode n;
  n.id = id;
  n.parent = parent;
  n.shares_raw = shares;
  n.usage_raw = usage;
  n.user = user;
  return n;
}

// root(0) -> a(1, 1 share), b(2, 1 share); a -> alice(3); b -> bob(4).
std::vector<FsNode> two_accounts(long double usage_a, long double usage_b) {
  return {node(1, -1, 1, usage_a + usage_b), node(2, 0, 1, usage_a), node(3, 0, 1, usage_b),
          node(4, 1, 1, usage_a, true), node(5, 2, 1, usage_b, true)};
}

TEST(DecayMultiplier, HalvesEveryHalfLife) {
  EXPECT_DOUBLE_EQ(decay_multiplier(60, 60), 0.5);
  EXPECT_DOUBLE_EQ(decay_multiplier(120, 60), 0.25);
  EXPECT_DOUBLE_EQ(decay_multiplier(0, 60), 1.0);
}

TEST(DecayMultiplier, AClockThatWentBackwardsDecaysNothing) {
  EXPECT_DOUBLE_EQ(decay_multiplier(-3600, 60), 1.0);
}

TEST(DecayMultiplier, NoHalfLifeMeansNoDecay) {
  EXPECT_DOUBLE_EQ(decay_multiplier(3600, 0), 1.0);
  EXPECT_DOUBLE_EQ(decay_multiplier(3600, -1), 1.0);
}

TEST(DecayMultiplier, AHugeGapDecaysToZeroWithoutNaN) {
  const double m = decay_multiplier(std::numeric_limits<int64_t>::max(), 1);
  EXPECT_GE(m, 0.0);
  EXPECT_LT(m, 1e-300);
}

TEST(Fairshare, EqualSharesNoUsageGiveFullFactorAndHalfTheShares) {
  auto t = two_accounts(0, 0);
  FsIssues issues;
  compute_fairshare(t, issues);
  EXPECT_DOUBLE_EQ(t[1].shares_norm, 0.5);
  EXPECT_DOUBLE_EQ(t[3].shares_norm, 0.5);  // only user of a: all of a's share
  EXPECT_EQ(t[1].level_shares, 2u);
  EXPECT_DOUBLE_EQ(t[3].fs_factor, 1.0);
  EXPECT_DOUBLE_EQ(t[4].fs_factor, 1.0);
  EXPECT_TRUE(issues.zero_shares.empty());
}

TEST(Fairshare, HeavyRecentUsageRanksBelowTheOtherAccount) {
  auto t = two_accounts(900, 100);
  FsIssues issues;
  compute_fairshare(t, issues);
  EXPECT_NEAR(static_cast<double>(t[1].usage_norm), 0.9, 1e-12);
  EXPECT_NEAR(static_cast<double>(t[1].usage_efctv), 0.9, 1e-12);  // under the root: its norm
  // alice: norm 0.9, efctv = 0.9 + (0.9 - 0.9) * 1/1 = 0.9; factor 2^(-0.9/0.5)
  EXPECT_NEAR(t[3].fs_factor, std::exp2(-1.8), 1e-12);
  EXPECT_NEAR(t[4].fs_factor, std::exp2(-0.2), 1e-12);
  EXPECT_LT(t[3].fs_factor, t[4].fs_factor);
}

TEST(Fairshare, ClassicEffectiveUsageMixesTheParentsBySharesAmongSiblings) {
  // root -> acct(1 share) -> u1 (3 shares, usage 10), u2 (1 share, usage 30)
  std::vector<FsNode> t = {node(1, -1, 1, 40), node(2, 0, 1, 40), node(3, 1, 3, 10, true),
                           node(4, 1, 1, 30, true)};
  FsIssues issues;
  compute_fairshare(t, issues);
  EXPECT_DOUBLE_EQ(t[2].shares_norm, 0.75);
  EXPECT_DOUBLE_EQ(t[3].shares_norm, 0.25);
  // u1: 0.25 + (1 - 0.25) * 3/4
  EXPECT_NEAR(static_cast<double>(t[2].usage_efctv), 0.25 + 0.75 * 0.75, 1e-12);
  EXPECT_NEAR(static_cast<double>(t[3].usage_efctv), 0.75 + 0.25 * 0.25, 1e-12);
  EXPECT_NEAR(t[2].fs_factor, fairshare_factor(t[2].usage_efctv, 0.75), 1e-15);
}

TEST(Fairshare, DecayClosesTheGapWhileTheOtherAccountKeepsRunning) {
  auto t = two_accounts(1000, 0);
  FsIssues issues;
  compute_fairshare(t, issues);
  const double gap0 = t[4].fs_factor - t[3].fs_factor;
  for (int period = 0; period < 10; ++period) {  // b runs 10 per period, half-life 2 periods
    decay_usage(t, decay_multiplier(60, 120));
    ASSERT_TRUE(add_usage(t, 4, 10, issues));
  }
  compute_fairshare(t, issues);
  const double gap1 = t[4].fs_factor - t[3].fs_factor;
  EXPECT_GT(gap0, 0.5);
  EXPECT_LT(gap1, gap0 / 2);
}

TEST(Fairshare, AddUsageReachesEveryAncestor) {
  auto t = two_accounts(0, 0);
  FsIssues issues;
  ASSERT_TRUE(add_usage(t, 3, 7, issues));
  EXPECT_EQ(t[3].usage_raw, 7);
  EXPECT_EQ(t[1].usage_raw, 7);
  EXPECT_EQ(t[0].usage_raw, 7);
  EXPECT_EQ(t[2].usage_raw, 0);
}

TEST(Fairshare, AddUsageRefusesBadInput) {
  auto t = two_accounts(0, 0);
  FsIssues issues;
  EXPECT_FALSE(add_usage(t, 99, 1, issues));
  EXPECT_FALSE(add_usage(t, -1, 1, issues));
  EXPECT_FALSE(add_usage(t, 3, -5, issues));
  EXPECT_FALSE(add_usage(t, 3, static_cast<long double>(NAN), issues));
  EXPECT_TRUE(issues.usage_clamped);
  EXPECT_EQ(t[0].usage_raw, 0);
}

TEST(Fairshare, UsageOverflowIsClampedAndReported) {
  auto t = two_accounts(0, 0);
  FsIssues issues;
  ASSERT_TRUE(add_usage(t, 3, kMaxUsageRaw, issues));
  EXPECT_FALSE(issues.usage_clamped);
  ASSERT_TRUE(add_usage(t, 3, kMaxUsageRaw, issues));
  EXPECT_TRUE(issues.usage_clamped);
  EXPECT_EQ(t[0].usage_raw, kMaxUsageRaw);
  t[4].usage_raw = std::numeric_limits<long double>::infinity();
  compute_fairshare(t, issues);
  EXPECT_EQ(t[4].usage_raw, kMaxUsageRaw);
  for (const auto& n : t) EXPECT_TRUE(std::isfinite(n.fs_factor));
}

TEST(Fairshare, ZeroOrMissingSharesGiveFactorZeroAndAreReported) {
  auto t = two_accounts(0, 0);
  t[1].shares_raw = 0;           // account a: no shares
  t[4].shares_raw = 0xfffffffe;  // bob: Slurm's NO_VAL
  FsIssues issues;
  compute_fairshare(t, issues);
  EXPECT_EQ(t[3].fs_factor, 0.0);  // alice under a
  EXPECT_EQ(t[4].fs_factor, 0.0);
  EXPECT_EQ(issues.zero_shares.size(), 2u);
  EXPECT_DOUBLE_EQ(t[2].shares_norm, 1.0);  // b has all the shares at its level
}

TEST(Fairshare, NoSiblingWithSharesTakesTheParentsEffectiveUsage) {
  std::vector<FsNode> t = {node(1, -1, 1, 10), node(2, 0, 1, 10), node(3, 1, 0, 10, true)};
  FsIssues issues;
  compute_fairshare(t, issues);
  EXPECT_EQ(t[2].level_shares, 0u);
  EXPECT_EQ(t[2].usage_efctv, t[1].usage_efctv);
  EXPECT_EQ(t[2].fs_factor, 0.0);
}

TEST(Fairshare, ParentSharesCompeteAsTheParent) {
  // root -> a (1) -> u (parent); root -> b (1)
  std::vector<FsNode> t = {node(1, -1, 1, 10), node(2, 0, 1, 10),
                           node(3, 1, kSharesUseParent, 10, true), node(4, 0, 1, 0)};
  FsIssues issues;
  compute_fairshare(t, issues);
  EXPECT_EQ(t[2].shares_norm, t[1].shares_norm);
  EXPECT_EQ(t[2].usage_efctv, t[1].usage_efctv);
  EXPECT_EQ(t[2].fs_parent, 1);
}

TEST(Fairshare, ChildrenOfAParentSharesNodeCountAtTheGrandparentsLevel) {
  // root -> a (1) -> g (parent) -> u1 (1), u2 (3)
  std::vector<FsNode> t = {node(1, -1, 1, 0), node(2, 0, 1, 0), node(3, 1, kSharesUseParent, 0),
                           node(4, 2, 1, 0, true), node(5, 2, 3, 0, true)};
  FsIssues issues;
  compute_fairshare(t, issues);
  EXPECT_EQ(t[3].fs_parent, 1);
  EXPECT_EQ(t[3].level_shares, 4u);
  EXPECT_DOUBLE_EQ(t[3].shares_norm, 0.25);
  EXPECT_DOUBLE_EQ(t[4].shares_norm, 0.75);
}

TEST(Fairshare, NodesInAnyOrderGiveTheSameResult) {
  auto a = two_accounts(300, 100);
  std::vector<FsNode> b = {a[4], a[3], a[2], a[1], a[0]};
  for (auto& n : b) n.parent = n.parent < 0 ? -1 : 4 - n.parent;
  FsIssues issues;
  compute_fairshare(a, issues);
  compute_fairshare(b, issues);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_DOUBLE_EQ(a[i].fs_factor, b[4 - i].fs_factor);
}

TEST(Fairshare, CyclesAndBadParentsBecomeRootsAndAreReported) {
  std::vector<FsNode> t = {node(1, 1, 1, 5), node(2, 0, 1, 5), node(3, 7, 1, 5), node(4, 3, 1, 5)};
  FsIssues issues;
  compute_fairshare(t, issues);             // must terminate
  EXPECT_EQ(issues.bad_parent.size(), 3u);  // 3 and 4 point nowhere, 1<->2 is a cycle
  for (const auto& n : t) EXPECT_TRUE(std::isfinite(n.fs_factor));
}

TEST(Fairshare, DampeningSoftensTheFactor) {
  EXPECT_DOUBLE_EQ(fairshare_factor(1.0L, 0.5L, 2.0), 0.5);
  EXPECT_DOUBLE_EQ(fairshare_factor(1.0L, 0.5L, 0.0), 0.25);  // below 1 counts as 1
}

TEST(Fairshare, UsageNeverComputedGivesZeroLikeSlurm) {
  EXPECT_EQ(fairshare_factor(static_cast<long double>(0xfffffffe), 0.5L), 0.0);
}

TEST(Fairshare, EmptyTreeIsFine) {
  std::vector<FsNode> t;
  FsIssues issues;
  compute_fairshare(t, issues);
  decay_usage(t, 0.5);
  EXPECT_FALSE(add_usage(t, 0, 1, issues));
}

TEST(WeightsMaySaturate, OnlyWhenTheSumCanPassThirtyTwoBits) {
  Weights w;
  w.age = w.fairshare = 1'000'000'000;
  EXPECT_FALSE(weights_may_saturate(w, 0));
  w.qos = w.partition = 1'000'000'000;
  EXPECT_FALSE(weights_may_saturate(w, 0));
  w.job_size = 1'000'000'000;
  EXPECT_TRUE(weights_may_saturate(w, 0));
  // priority_value saturates rather than wraps
  PriorityTerms terms;
  terms.age = terms.fairshare = terms.qos = terms.partition = terms.job_size = 1e9;
  EXPECT_EQ(priority_value(terms), UINT32_MAX - 1);
}

TEST(EffectiveWeights, HalfLifeAndCalcPeriodFromSlurmWhenSetPolicyOtherwise) {
  PriorityWeights policy;
  policy.half_life_s = 60;
  policy.calc_period_s = 5;
  SlurmWeights slurm;  // both at Slurm's defaults: reported as 0
  Weights w = effective_weights(policy, slurm);
  EXPECT_EQ(w.half_life_s, 60);
  EXPECT_EQ(w.calc_period_s, 5);
  slurm.half_life_s = 3600;
  slurm.calc_period_s = 120;
  w = effective_weights(policy, slurm);
  EXPECT_EQ(w.half_life_s, 3600);
  EXPECT_EQ(w.calc_period_s, 120);
  slurm.half_life_s = -1;  // PriorityDecayHalfLife=0: no decay
  EXPECT_EQ(effective_weights(policy, slurm).half_life_s, 0);
}

TEST(JobSizeFactor, FractionOfTheClusterOrItsComplement) {
  EXPECT_DOUBLE_EQ(job_size_factor(3, 12, false), 0.25);
  EXPECT_DOUBLE_EQ(job_size_factor(3, 12, true), 0.75);
  EXPECT_DOUBLE_EQ(job_size_factor(30, 12, false), 1.0);
  EXPECT_DOUBLE_EQ(job_size_factor(3, 0, false), 0.0);
}

}  // namespace
}  // namespace sp

namespace sp {
namespace {

TEST(FairshareState, RoundTripsAndRejectsDamage) {
  EXPECT_EQ(parse_state(format_state(1700000000)), 1700000000);
  EXPECT_EQ(parse_state(""), std::nullopt);
  EXPECT_EQ(parse_state("version 1\nlast_decay 17000"), std::nullopt);  // truncated
  EXPECT_EQ(parse_state("version 2\nlast_decay 5\n"), std::nullopt);
  EXPECT_EQ(parse_state("version 1\nlast_decay -5\n"), std::nullopt);
  EXPECT_EQ(parse_state("version 1\nlast_decay x\n"), std::nullopt);
}

}  // namespace
}  // namespace sp
