// job_modify's pause translation layer on real job_record_t layouts, without daemons.
#include "pause_adapter.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sp {
namespace {

class PauseAdapter : public ::testing::Test {
 protected:
  void SetUp() override {
    job.job_id = 42;
    job.job_state = JOB_RUNNING;
    job.batch_flag = 1;
    job.details = &details;
    details.requeue = 1;
    job.priority = 100;
    job.start_time = 1000;
    job.user_id = 1001;
    job.array_task_id = NO_VAL;
    promise.grace_s = 30;
  }
  job_record_t job{};
  struct job_details details {};
  JobCheckpoint promise;
  job_desc_msg_t desc{};
};

TEST_F(PauseAdapter, ARunningManagedBatchJob) {
  const PauseJobView v = pause_view_of(job, &promise, StoryField::AdminComment);
  EXPECT_EQ(v.state, PauseJobView::State::Running);
  EXPECT_TRUE(v.batch && v.requeue && v.managed);
  EXPECT_EQ(v.promise_grace_s, 30);
  EXPECT_FALSE(v.held);
  EXPECT_EQ(v.start, 1000);
  EXPECT_EQ(v.owner, 1001u);
  EXPECT_EQ(v.preempt, 0);
  EXPECT_FALSE(v.het);
  job.het_job_id = 42;  // the leader, or any component: every record of the het job has it
  EXPECT_TRUE(pause_view_of(job, &promise, StoryField::AdminComment).het);
}

TEST_F(PauseAdapter, PendingHeldUnmanagedNoRequeueInteractive) {
  job.job_state = JOB_PENDING;
  job.priority = 0;
  job.batch_flag = 0;
  details.requeue = 0;
  const PauseJobView v = pause_view_of(job, nullptr, StoryField::AdminComment);
  EXPECT_EQ(v.state, PauseJobView::State::Pending);
  EXPECT_TRUE(v.held);
  EXPECT_FALSE(v.user_hold);  // state_reason WAIT_NO_REASON: not the user's hold
  job.state_reason = WAIT_HELD_USER;
  EXPECT_TRUE(pause_view_of(job, nullptr, StoryField::AdminComment).user_hold);
  job.state_reason = WAIT_RESV_DELETED;  // Slurm lets the user release that one too
  EXPECT_TRUE(pause_view_of(job, nullptr, StoryField::AdminComment).user_hold);
  job.state_reason = WAIT_HELD;
  EXPECT_FALSE(pause_view_of(job, nullptr, StoryField::AdminComment).user_hold);
  job.priority = 1;  // released: no hold at all
  job.state_reason = WAIT_HELD_USER;
  EXPECT_FALSE(pause_view_of(job, nullptr, StoryField::AdminComment).user_hold);
  job.priority = 0;
  EXPECT_FALSE(v.batch || v.requeue || v.managed);
  EXPECT_EQ(v.promise_grace_s, -1);
  job.job_state = JOB_COMPLETE;
  EXPECT_EQ(pause_view_of(job, nullptr, StoryField::AdminComment).state,
            PauseJobView::State::Finished);
  job.details = nullptr;
  EXPECT_FALSE(pause_view_of(job, nullptr, StoryField::AdminComment).requeue);
}

TEST_F(PauseAdapter, TheMarkComesFromAdminComment) {
  std::string story = "slurm-preempt: paused by erin (admin) at 2026-11-23T18:40:01Z, grace 30 s;";
  job.admin_comment = story.data();
  job.preempt_time = 1500;
  const PauseJobView v = pause_view_of(job, &promise, StoryField::AdminComment);
  EXPECT_TRUE(v.mark.paused);
  EXPECT_TRUE(v.mark.admin);
  EXPECT_GT(v.mark.at, 0);
  EXPECT_EQ(v.preempt, 1500);
}

TEST_F(PauseAdapter, AWholeArrayMustBeNamedTaskByTask) {
  EXPECT_FALSE(names_whole_array(desc, job));  // not an array
  job.array_task_id = 4;
  std::string whole = "40", task = "40_4";
  desc.job_id_str = whole.data();
  EXPECT_TRUE(names_whole_array(desc, job));
  desc.job_id_str = task.data();
  EXPECT_FALSE(names_whole_array(desc, job));
  desc.job_id_str = nullptr;
  EXPECT_TRUE(names_whole_array(desc, job));
  std::string range = "40_[1-3]";
  desc.job_id_str = range.data();
  EXPECT_TRUE(names_whole_array(desc, job));  // a split task under a range
  job_array_struct_t recs{};
  job.array_recs = &recs;  // the record holding the pending tasks
  job.array_task_id = NO_VAL;
  EXPECT_FALSE(names_whole_array(desc, job));
  desc.job_id_str = whole.data();
  EXPECT_TRUE(names_whole_array(desc, job));
  job.array_recs = nullptr;
}

TEST_F(PauseAdapter, EveryRefusalHasItsOwnSlurmError) {
  EXPECT_EQ(pause_error_code(PauseError::None), SLURM_SUCCESS);
  EXPECT_EQ(pause_error_code(PauseError::NotAllowed), ESLURM_ACCESS_DENIED);
  EXPECT_EQ(pause_error_code(PauseError::NoRequeue), ESLURM_DISABLED);
  EXPECT_EQ(pause_error_code(PauseError::Interactive), ESLURM_BATCH_ONLY);
  EXPECT_EQ(pause_error_code(PauseError::NotPaused), ESLURM_JOB_NOT_PENDING);
  EXPECT_EQ(pause_error_code(PauseError::GraceTooLong), ESLURM_INVALID_TIME_VALUE);
  EXPECT_EQ(pause_error_code(PauseError::HetJob), ESLURM_NOT_WHOLE_HET_JOB);
  EXPECT_EQ(pause_error_code(PauseError::PreemptCancels), ESLURM_INVALID_QOS);
}

// assoc_mgr's user list as slurmctld holds it: a List of slurmdb_user_rec_t.
TEST(PauseRequesterInUserList, FindsTheUidsNameAndNothingForAnother) {
  slurmdb_user_rec_t alice{};
  alice.uid = 1001;
  alice.name = const_cast<char*>("alice");
  slurmdb_user_rec_t nameless{};
  nameless.uid = 1003;
  slurmdb_user_rec_t bob{};
  bob.uid = 1002;
  bob.name = const_cast<char*>("bob");
  List users = slurm_list_create(nullptr);
  slurm_list_append(users, &alice);
  slurm_list_append(users, &nameless);
  slurm_list_append(users, &bob);
  EXPECT_EQ(user_name_in(users, 1002), "bob");
  EXPECT_EQ(user_name_in(users, 1001), "alice");
  EXPECT_EQ(user_name_in(users, 1003), "");
  EXPECT_EQ(user_name_in(users, 4242), "");
  slurm_list_destroy(users);
  EXPECT_EQ(user_name_in(nullptr, 1001), "");  // no accounting: no list
}

}  // namespace
}  // namespace sp
