// priority/fairshare's usage pass (plugins/priority_fairshare/usage.cpp) on real
// slurmdb_assoc_rec_t, slurmdb_qos_rec_t and job_record_t layouts in assoc_mgr's own lists
// (libslurmfull): prepare() under the read locks, apply() under the write locks, and apply()'s
// check that nothing prepare() read changed in between. Its own program: it links
// libslurmfull for assoc_mgr's globals, which unit_tests (libslurm) does not have.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "log.hpp"
#include "usage.hpp"

extern "C" {
#include "src/common/assoc_mgr.h"
#include "src/common/list.h"
}

extern "C" {
int slurmctld_tres_cnt = 3;  // cpu, mem, energy
List job_list = nullptr;
// slurmctld's (job_mgr.c), its cached path: a running job's billable TRES are set at start.
double calc_job_billable_tres(job_record_t* job_ptr, time_t /*start_time*/,
                              bool /*assoc_mgr_locked*/) {
  return job_ptr->billable_tres;
}
}

namespace {

constexpr int64_t kT0 = 1'700'000'000;
constexpr int kTres = 3;
constexpr uint64_t kRunSecs = 1'000'000;

class Lines : public sp::LogSink {
 public:
  void write(sp::LogLevel /*level*/, std::string_view message) override {
    lines.emplace_back(message);
  }
  std::vector<std::string> lines;
};

struct Assoc {
  slurmdb_assoc_rec_t rec{};
  slurmdb_assoc_usage_t usage{};
  std::array<long double, kTres> tres_raw{};
  std::array<uint64_t, kTres> run_secs{};
};

// root (1) -> A (2) -> A/u (3), root -> B (4) -> B/u (5); QOS q; j1 on A/u since before the
// tracker's start, j2 on B/u since 30 s after it.
class UsageTrackerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    slurm_conf.state_save_location = const_cast<char*>("/nonexistent-usage-tracker-test");
    slurm_conf.accounting_storage_enforce = ACCOUNTING_ENFORCE_LIMITS;
    assoc_mgr_assoc_list = list_create(nullptr);
    assoc_mgr_qos_list = list_create(nullptr);
    job_list = list_create(nullptr);
    root_ = add(1, "root", nullptr, nullptr, 1000);
    a_ = add(2, "a", nullptr, root_, 600);
    au_ = add(3, "a", "u", a_, 600);
    b_ = add(4, "b", nullptr, root_, 400);
    bu_ = add(5, "b", "u", b_, 400);
    assoc_mgr_root_assoc = &root_->rec;
    qos_.name = const_cast<char*>("q");
    qos_.usage_factor = 1.0;
    qos_.usage = &qos_usage_;
    qos_usage_.usage_raw = 1000;
    qos_usage_.grp_used_wall = 100;
    qos_usage_.grp_used_tres_run_secs = qos_run_secs_.data();
    qos_run_secs_.fill(kRunSecs);
    list_append(assoc_mgr_qos_list, &qos_);
    job(j1_, 1, au_, kT0 - 100, 2, {2, 100, 0});
    job(j2_, 2, bu_, kT0 + 30, 4, {4, 200, NO_CONSUME_VAL64});
    running_ = {&j1_, &j2_};
    tracker_ = std::make_unique<sp::UsageTracker>(log_, kT0);
    w_.half_life_s = 60;  // one pass 60 s after the start halves the old usage
  }

  void TearDown() override {
    list_destroy(assoc_mgr_assoc_list);
    list_destroy(assoc_mgr_qos_list);
    list_destroy(job_list);
    assoc_mgr_assoc_list = nullptr;
    assoc_mgr_qos_list = nullptr;
    assoc_mgr_root_assoc = nullptr;
    job_list = nullptr;
  }

  Assoc* add(uint32_t id, const char* acct, const char* user, Assoc* parent, long double raw) {
    auto a = std::make_unique<Assoc>();
    a->rec.id = id;
    a->rec.acct = const_cast<char*>(acct);
    a->rec.user = const_cast<char*>(user);
    a->rec.shares_raw = 1;
    a->rec.usage = &a->usage;
    a->usage.usage_raw = raw;
    a->usage.grp_used_wall = 100;
    a->tres_raw.fill(10);
    a->usage.usage_tres_raw = a->tres_raw.data();
    a->run_secs.fill(kRunSecs);
    a->usage.grp_used_tres_run_secs = a->run_secs.data();
    a->usage.parent_assoc_ptr = parent ? &parent->rec : nullptr;
    a->usage.fs_assoc_ptr = parent ? &parent->rec : nullptr;
    list_append(assoc_mgr_assoc_list, &a->rec);
    assocs_.push_back(std::move(a));
    return assocs_.back().get();
  }

  void job(job_record_t& j, uint32_t id, Assoc* assoc, int64_t start, double billable,
           std::array<uint64_t, kTres> tres) {
    j.job_id = id;
    j.job_state = JOB_RUNNING;
    j.assoc_ptr = &assoc->rec;
    j.qos_ptr = &qos_;
    j.start_time = static_cast<time_t>(start);
    j.end_time_exp = static_cast<time_t>(start + 3600);
    j.time_limit = 60;
    j.billable_tres = billable;
    tres_.push_back(std::make_unique<std::array<uint64_t, kTres>>(tres));
    j.tres_alloc_cnt = tres_.back()->data();
    list_append(job_list, &j);
  }

  // Whether apply() logged that it computed the pass again.
  bool recomputed() const {
    for (const std::string& line : log_.lines) {
      if (line.find("the pass computed again") != std::string::npos) return true;
    }
    return false;
  }

  void pass(int64_t now) {
    tracker_->prepare(now, w_, 1.0, running_);
    tracker_->apply();
  }

  Lines log_;
  std::vector<std::unique_ptr<Assoc>> assocs_;
  std::vector<std::unique_ptr<std::array<uint64_t, kTres>>> tres_;
  Assoc *root_ = nullptr, *a_ = nullptr, *au_ = nullptr, *b_ = nullptr, *bu_ = nullptr;
  slurmdb_qos_rec_t qos_{};
  slurmdb_qos_usage_t qos_usage_{};
  std::array<uint64_t, kTres> qos_run_secs_{};
  job_record_t j1_{}, j2_{};
  std::vector<job_record_t*> running_;
  sp::Weights w_;
  std::unique_ptr<sp::UsageTracker> tracker_;
};

// j1: 60 s x billable 2 = 120; j2: 30 s x 4 = 120; old usage halved.
TEST_F(UsageTrackerTest, PassDecaysAccruesAndSetsFactors) {
  pass(kT0 + 60);
  EXPECT_DOUBLE_EQ(static_cast<double>(au_->usage.usage_raw), 300 + 120);
  EXPECT_DOUBLE_EQ(static_cast<double>(a_->usage.usage_raw), 300 + 120);
  EXPECT_DOUBLE_EQ(static_cast<double>(bu_->usage.usage_raw), 200 + 120);
  EXPECT_DOUBLE_EQ(static_cast<double>(root_->usage.usage_raw), 500 + 240);
  // TRES-seconds: decayed, then each job's TRES x seconds on its whole chain; NO_CONSUME none.
  EXPECT_DOUBLE_EQ(static_cast<double>(au_->tres_raw[0]), 5 + 60 * 2);
  EXPECT_DOUBLE_EQ(static_cast<double>(au_->tres_raw[1]), 5 + 60 * 100);
  EXPECT_DOUBLE_EQ(static_cast<double>(bu_->tres_raw[0]), 5 + 30 * 4);
  EXPECT_DOUBLE_EQ(static_cast<double>(bu_->tres_raw[2]), 5);
  EXPECT_DOUBLE_EQ(static_cast<double>(root_->tres_raw[0]), 5 + 120 + 120);
  EXPECT_DOUBLE_EQ(au_->usage.grp_used_wall, 50 + 60);
  EXPECT_DOUBLE_EQ(root_->usage.grp_used_wall, 50 + 90);
  // The QOS: decayed and both jobs' usage.
  EXPECT_DOUBLE_EQ(static_cast<double>(qos_usage_.usage_raw), 500 + 240);
  EXPECT_DOUBLE_EQ(qos_usage_.grp_used_wall, 50 + 90);
  // Fair share from the new tree: A/u has 420 of 740, B/u 320.
  EXPECT_NEAR(static_cast<double>(au_->usage.usage_norm), 420.0 / 740.0, 1e-12);
  EXPECT_NEAR(static_cast<double>(bu_->usage.usage_norm), 320.0 / 740.0, 1e-12);
  EXPECT_GT(bu_->usage.fs_factor, au_->usage.fs_factor);
  EXPECT_GT(au_->usage.fs_factor, 0.0);
  // Run-seconds given back (the first pass also gives back j1's run before the start: 100 s;
  // energy is never reserved).
  EXPECT_EQ(au_->run_secs[0], kRunSecs - 2 * 160);
  EXPECT_EQ(au_->run_secs[1], kRunSecs - 100 * 160);
  EXPECT_EQ(bu_->run_secs[0], kRunSecs - 4 * 30);
  EXPECT_EQ(bu_->run_secs[2], kRunSecs);
  EXPECT_EQ(root_->run_secs[0], kRunSecs - 2 * 160 - 4 * 30);
  EXPECT_EQ(qos_run_secs_[0], kRunSecs - 2 * 160 - 4 * 30);
  EXPECT_EQ(tracker_->last_decay(), kT0 + 60);
  EXPECT_FALSE(recomputed());  // nothing changed between the two parts
}

TEST_F(UsageTrackerTest, PrepareAloneWritesNothing) {
  tracker_->prepare(kT0 + 60, w_, 1.0, running_);
  EXPECT_DOUBLE_EQ(static_cast<double>(au_->usage.usage_raw), 600);
  EXPECT_DOUBLE_EQ(static_cast<double>(au_->tres_raw[0]), 10);
  EXPECT_DOUBLE_EQ(static_cast<double>(qos_usage_.usage_raw), 1000);
  EXPECT_EQ(au_->run_secs[0], kRunSecs);
  EXPECT_DOUBLE_EQ(au_->usage.fs_factor, 0.0);
  EXPECT_EQ(tracker_->last_decay(), kT0);
}

TEST_F(UsageTrackerTest, ApplyWithoutPrepareDoesNothing) {
  tracker_->apply();
  pass(kT0 + 60);
  tracker_->apply();  // the pass is applied once
  EXPECT_DOUBLE_EQ(static_cast<double>(au_->usage.usage_raw), 420);
  EXPECT_DOUBLE_EQ(static_cast<double>(qos_usage_.usage_raw), 740);
  EXPECT_EQ(au_->run_secs[0], kRunSecs - 2 * 160);
}

// An administrator's usage reset between the two parts is kept: the pass is computed again.
TEST_F(UsageTrackerTest, UsageChangedBetweenPartsIsRecomputed) {
  tracker_->prepare(kT0 + 60, w_, 1.0, running_);
  au_->usage.usage_raw = 0;
  tracker_->apply();
  EXPECT_TRUE(recomputed());
  EXPECT_DOUBLE_EQ(static_cast<double>(au_->usage.usage_raw), 0 + 120);
  EXPECT_DOUBLE_EQ(static_cast<double>(root_->usage.usage_raw), 500 + 240);
  // Applied once, not twice.
  EXPECT_DOUBLE_EQ(static_cast<double>(au_->tres_raw[0]), 5 + 60 * 2);
  EXPECT_DOUBLE_EQ(static_cast<double>(qos_usage_.usage_raw), 500 + 240);
}

// An association added between the two parts gets its fair-share factor from this pass.
TEST_F(UsageTrackerTest, AssociationAddedBetweenPartsIsRecomputed) {
  tracker_->prepare(kT0 + 60, w_, 1.0, running_);
  Assoc* c = add(6, "c", nullptr, root_, 0);
  tracker_->apply();
  EXPECT_TRUE(recomputed());
  EXPECT_GT(c->usage.fs_factor, 0.0);
  EXPECT_GT(c->usage.shares_norm, 0.0);
  EXPECT_DOUBLE_EQ(static_cast<double>(au_->usage.usage_raw), 420);
}

TEST_F(UsageTrackerTest, ParentChangedBetweenPartsIsRecomputed) {
  tracker_->prepare(kT0 + 60, w_, 1.0, running_);
  bu_->usage.parent_assoc_ptr = &a_->rec;  // sacctmgr moved b's user under a
  bu_->usage.fs_assoc_ptr = &a_->rec;
  tracker_->apply();
  EXPECT_TRUE(recomputed());
  // An association's usage_raw holds its subtree's, as Slurm keeps it: j2's new usage now goes
  // to a (300 + 120 + 120), none to b (200); the pass prepared before the move had b 320.
  EXPECT_DOUBLE_EQ(static_cast<double>(a_->usage.usage_raw), 300 + 120 + 120);
  EXPECT_DOUBLE_EQ(static_cast<double>(b_->usage.usage_raw), 200);
}

// A QOS that left assoc_mgr's list between the two parts is never written.
TEST_F(UsageTrackerTest, QosRemovedBetweenPartsIsNotWritten) {
  tracker_->prepare(kT0 + 60, w_, 1.0, running_);
  list_delete_ptr(assoc_mgr_qos_list, &qos_);
  tracker_->apply();
  EXPECT_DOUBLE_EQ(static_cast<double>(qos_usage_.usage_raw), 1000);
  EXPECT_DOUBLE_EQ(qos_usage_.grp_used_wall, 100);
  EXPECT_DOUBLE_EQ(static_cast<double>(au_->usage.usage_raw), 420);
}

TEST_F(UsageTrackerTest, ClockBackMovesOnlyTheMark) {
  pass(kT0 - 10);
  EXPECT_DOUBLE_EQ(static_cast<double>(au_->usage.usage_raw), 600);
  EXPECT_DOUBLE_EQ(static_cast<double>(qos_usage_.usage_raw), 1000);
  EXPECT_EQ(tracker_->last_decay(), kT0 - 10);
  ASSERT_FALSE(log_.lines.empty());
  EXPECT_NE(log_.lines.back().find("the clock went back 10 s"), std::string::npos)
      << log_.lines.back();
}

// The next pass goes on from the last: only the 60 s since it.
TEST_F(UsageTrackerTest, SecondPassAccruesOnlySinceTheFirst) {
  pass(kT0 + 60);
  pass(kT0 + 120);
  EXPECT_FALSE(recomputed());  // what the first pass wrote is what the second reads
  EXPECT_DOUBLE_EQ(static_cast<double>(au_->usage.usage_raw), 210 + 120);
  EXPECT_DOUBLE_EQ(static_cast<double>(bu_->usage.usage_raw), 160 + 240);
  EXPECT_EQ(au_->run_secs[0], kRunSecs - 2 * 220);
}

}  // namespace
