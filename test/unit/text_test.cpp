#include "text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sp {
namespace {

TEST(Quote, KeepsPlainTextAndUtf8) {
  EXPECT_EQ(quote("train-resnet_50 v2"), "train-resnet_50 v2");
  EXPECT_EQ(quote("r\xc3\xa9sum\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac"),
            "r\xc3\xa9sum\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac");
  EXPECT_EQ(quote(""), "");
}

TEST(Quote, EscapesEverythingThatCouldForgeOrHideALine) {
  EXPECT_EQ(quote("a\nb"), "a\\nb");
  EXPECT_EQ(quote("a\r\tb"), "a\\r\\tb");
  EXPECT_EQ(quote(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(quote("\x1b[2Jx\x7f"), "\\x1b[2Jx\\x7f");
  EXPECT_EQ(quote("back\\slash"), "back\\\\slash");         // so an escape cannot be faked
  EXPECT_EQ(quote("\xff\xfe"), "\\xff\\xfe");               // not UTF-8
  EXPECT_EQ(quote("\xc0\xaf"), "\\xc0\\xaf");               // overlong '/'
  EXPECT_EQ(quote("\xed\xa0\x80"), "\\xed\\xa0\\x80");      // a surrogate
  EXPECT_EQ(quote("\xc2\x85"), "\\xc2\\x85");               // NEL, a C1 control
  EXPECT_EQ(quote("a\xe2\x80\xa8z"), "a\\xe2\\x80\\xa8z");  // LINE SEPARATOR
  EXPECT_EQ(quote("\xe2\x80\xae"
                  "evil"),
            "\\xe2\\x80\\xae"
            "evil");  // RIGHT-TO-LEFT OVERRIDE
  const std::string out = quote("job\nslurmctld: error: forged");
  EXPECT_EQ(out.find('\n'), std::string::npos);
}

TEST(Quote, BoundsLongTextAndSaysHowLongItWas) {
  const std::string huge(120 * 1024, 'x');
  const std::string out = quote(huge);
  EXPECT_EQ(out, std::string(kQuoteLimit, 'x') + "...(122880 bytes)");
  EXPECT_EQ(quote(std::string(kQuoteLimit, 'y')), std::string(kQuoteLimit, 'y'));
  EXPECT_EQ(quote("abcdef", 3), "abc...(6 bytes)");
  // Escaping at most quadruples the shown bytes: the line stays bounded whatever comes in.
  const std::string controls(100000, '\x01');
  EXPECT_LE(quote(controls).size(), 4 * kQuoteLimit + 32);
  // A multi-byte character cut by the bound is escaped, not left half-written.
  EXPECT_EQ(quote("ab\xc3\xa9", 3), "ab\\xc3...(4 bytes)");
}

TEST(SameName, IgnoresAsciiCaseOnly) {
  EXPECT_TRUE(same_name("standby", "Standby"));
  EXPECT_TRUE(same_name("STANDBY", "standby"));
  EXPECT_TRUE(same_name("", ""));
  EXPECT_FALSE(same_name("standby", "standby2"));
  EXPECT_FALSE(same_name("standby", "stand"));
  EXPECT_FALSE(same_name("\xc3\xa9", "\xc3\x89"));  // Slurm's xstrcasecmp is ASCII-only
}

}  // namespace
}  // namespace sp
