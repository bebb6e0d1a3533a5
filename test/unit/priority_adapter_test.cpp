// The priority translation layer on a real job_record_t layout, without daemons.
#include "priority_adapter.hpp"

#include <gtest/gtest.h>

namespace sp {
namespace {

TEST(PriorityAdapter, NiceIsRelativeToSlurmsOffset) {
  job_record_t job{};
  struct job_details details {};
  EXPECT_EQ(nice_of(job), 0);  // no details: neutral
  job.details = &details;
  details.nice = NICE_OFFSET;
  EXPECT_EQ(nice_of(job), 0);
  details.nice = NICE_OFFSET + 100;
  EXPECT_EQ(nice_of(job), 100);
  details.nice = NICE_OFFSET - 50;
  EXPECT_EQ(nice_of(job), -50);
}

}  // namespace
}  // namespace sp
