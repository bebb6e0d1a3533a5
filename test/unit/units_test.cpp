#include "units.hpp"

#include <gtest/gtest.h>

#include <csignal>

namespace sp {
namespace {

TEST(ParseDuration, AcceptsSecondsUnitsAndSlurmClockForms) {
  EXPECT_EQ(parse_duration("90"), 90);
  EXPECT_EQ(parse_duration("90s"), 90);
  EXPECT_EQ(parse_duration("15m"), 900);
  EXPECT_EQ(parse_duration("2h"), 7200);
  EXPECT_EQ(parse_duration("3d"), 3 * 86400);
  EXPECT_EQ(parse_duration("10:00"), 600);
  EXPECT_EQ(parse_duration("01:02:03"), 3723);
  EXPECT_EQ(parse_duration("1-12"), 86400 + 12 * 3600);
  EXPECT_EQ(parse_duration("7-00:00:00"), 7 * 86400);
  EXPECT_EQ(parse_duration("0"), 0);
}

TEST(ParseDuration, RejectsNegativeGarbageAndOverlongInput) {
  for (const char* bad : {"", "-5", "5x", "s", "1:2:3:4", "1-", "-1-00", "abc", "1.5h", "10 m",
                          "9999999999999999h"}) {
    EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
  }
}

// Found by the units fuzzer (test/fuzz/units.cpp): days plus a clock of 12-digit hours made
// a duration whose day count format_duration() printed with 13 digits, which it refused.
TEST(ParseDuration, RefusesWhatItCouldNotReadBackAndRoundTripsItsLongest) {
  EXPECT_FALSE(parse_duration("999999999999-999999999999:00:00").has_value());
  EXPECT_FALSE(parse_duration("999999999999d").has_value());
  EXPECT_FALSE(parse_duration("1000000000000").has_value());
  EXPECT_EQ(parse_duration("999999999999"), kMaxDurationSeconds);
  EXPECT_EQ(parse_duration(format_duration(kMaxDurationSeconds)), kMaxDurationSeconds);
  EXPECT_EQ(parse_duration("11574074-01:46:39"), kMaxDurationSeconds);
  EXPECT_FALSE(parse_duration("11574074-01:46:40").has_value());
}

TEST(ParseSignal, AcceptsNamesWithOrWithoutSigAndNumbers) {
  EXPECT_EQ(parse_signal("USR1"), SIGUSR1);
  EXPECT_EQ(parse_signal("SIGUSR2"), SIGUSR2);
  EXPECT_EQ(parse_signal("term"), SIGTERM);
  EXPECT_EQ(parse_signal("10"), 10);
  EXPECT_FALSE(parse_signal("USR3").has_value());
  EXPECT_FALSE(parse_signal("0").has_value());
  EXPECT_FALSE(parse_signal("65").has_value());
  EXPECT_FALSE(parse_signal("SIG").has_value());
  EXPECT_EQ(signal_name(SIGUSR1), "USR1");
  EXPECT_EQ(signal_name(40), "SIG40");
}

// Found by the units fuzzer (test/fuzz/units.cpp): a job promised signal 40 gets
// SLURM_CHECKPOINT_SIGNAL=SIG40, and the node side could not parse it back.
TEST(ParseSignal, ReadsBackEveryNameSignalNamePrints) {
  EXPECT_EQ(parse_signal("SIG40"), 40);
  EXPECT_EQ(parse_signal("sig17"), 17);
  for (const char* bad : {"SIG0", "SIG65", "SIG-1", "SIG4x", "SIGSIG10", "SIG 5"}) {
    EXPECT_FALSE(parse_signal(bad).has_value()) << bad;
  }
  for (int s = 1; s <= 64; ++s) EXPECT_EQ(parse_signal(signal_name(s)), s) << signal_name(s);
}

TEST(ExpandHostlist, ExpandsRangesListsAndPadding) {
  using V = std::vector<std::string>;
  EXPECT_EQ(expand_hostlist("n[3-4]"), (V{"n3", "n4"}));
  EXPECT_EQ(expand_hostlist("n[1,3-4],gpu01"), (V{"n1", "n3", "n4", "gpu01"}));
  EXPECT_EQ(expand_hostlist("a[08-10]"), (V{"a08", "a09", "a10"}));
  EXPECT_EQ(expand_hostlist("single"), (V{"single"}));
}

TEST(ExpandHostlist, RejectsMalformedAndHugeLists) {
  for (const char* bad : {"", "n[", "n[]", "n[4-3]", "[1-2]", "n[1-2]x", "n1,", ",n1", "n[1,,2]"}) {
    EXPECT_FALSE(expand_hostlist(bad).has_value()) << bad;
  }
  EXPECT_FALSE(expand_hostlist("n[1-100000]", 1000).has_value());
}

}  // namespace
}  // namespace sp

namespace sp {
namespace {

TEST(CommaLists, FindTheFirstMatchingItemAndSkipEmptyOnes) {
  EXPECT_EQ(first_in_list("public,chem,bio", [](std::string_view s) { return s.size() == 4; }),
            "chem");
  EXPECT_TRUE(first_in_list("", [](std::string_view) { return true; }).empty());
  EXPECT_EQ(first_in_list(",,x", [](std::string_view) { return true; }), "x");
  EXPECT_TRUE(list_contains("public,standby", "standby"));
  EXPECT_FALSE(list_contains("public,standbyx", "standby"));
  EXPECT_FALSE(list_contains("", "standby"));
}

}  // namespace
}  // namespace sp
