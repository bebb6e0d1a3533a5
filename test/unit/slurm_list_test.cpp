// plugins/common/slurm_list.hpp on Slurm's own List (libslurm), without daemons.
#include "slurm_list.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

namespace sp {
namespace {

class SlurmList : public ::testing::Test {
 protected:
  void SetUp() override {
    list = slurm_list_create(nullptr);
    for (int& v : values) slurm_list_append(list, &v);
  }
  void TearDown() override {
    if (list != nullptr) slurm_list_destroy(list);
  }

  // Whether another thread can append to the list within a deadline: not while a walk's read
  // lock is still held (the list is then leaked: destroying it would wait for that lock).
  bool writable_from_another_thread() {
    std::promise<void> done;
    std::future<void> appended = done.get_future();
    static int extra = 99;
    std::thread([l = list, d = std::move(done)]() mutable {
      slurm_list_append(l, &extra);
      d.set_value();
    }).detach();
    if (appended.wait_for(std::chrono::seconds(10)) == std::future_status::ready) return true;
    list = nullptr;
    return false;
  }

  int values[4] = {1, 2, 3, 4};
  List list = nullptr;
};

TEST_F(SlurmList, ForEachRoVisitsEveryItemInOrder) {
  std::vector<int> seen;
  for_each_ro<int>(list, [&](const int* v) {
    seen.push_back(*v);
    return true;
  });
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 4}));
}

TEST_F(SlurmList, ForEachRoStopsWhenTheCallableReturnsFalse) {
  std::vector<int> seen;
  for_each_ro<int>(list, [&](const int* v) {
    seen.push_back(*v);
    return *v < 2;
  });
  EXPECT_EQ(seen, (std::vector<int>{1, 2}));
  ASSERT_TRUE(writable_from_another_thread());
}

TEST_F(SlurmList, ForEachRoOnNoListCallsNothing) {
  int calls = 0;
  for_each_ro<int>(nullptr, [&](const int*) { return ++calls, true; });
  EXPECT_EQ(calls, 0);
}

// An exception must not unwind through Slurm's C code, which holds the list's read lock: it
// stops the walk, and reaches the caller after the lock is released.
TEST_F(SlurmList, ForEachRoRethrowsAfterReleasingTheListLock) {
  std::vector<int> seen;
  EXPECT_THROW(for_each_ro<int>(list,
                                [&](const int* v) {
                                  seen.push_back(*v);
                                  if (*v == 2) throw std::length_error("full");
                                  return true;
                                }),
               std::length_error);
  EXPECT_EQ(seen, (std::vector<int>{1, 2}));
  ASSERT_TRUE(writable_from_another_thread());
  EXPECT_EQ(slurm_list_count(list), 5);  // the four and the other thread's
}

}  // namespace
}  // namespace sp
