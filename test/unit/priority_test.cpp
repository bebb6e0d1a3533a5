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
