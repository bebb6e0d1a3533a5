// preempt/quota's translation of a sweep's first victim into a scheduling pass request
// (QuotaSweeps::preemptable's PassNote, grace_started), and of the queue sort's check
// (queue_preempts), on real job_record_t layouts, without daemons. The decisions are
// lib/quota's PassRequests and QueueClasses (quota_test.cpp).
#include "quota_adapter.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "policy_loader.hpp"

namespace {
std::unordered_map<uint32_t, job_record_t*> g_jobs;
int g_lookups = 0;  // find_job_record calls
}  // namespace

extern "C" {
// slurmctld's lookup, which the sweeps use for jobs they knew.
job_record_t* find_job_record(uint32_t job_id) {
  ++g_lookups;
  const auto it = g_jobs.find(job_id);
  return it == g_jobs.end() ? nullptr : it->second;
}
// slurmctld's names for libslurm's bitstring functions (slurm_xlator.h aliases them there).
bitoff_t slurm_bit_size(bitstr_t* b);
int slurm_bit_test(bitstr_t* b, bitoff_t bit);
bitstr_t* slurm_bit_alloc(bitoff_t nbits);
void slurm_bit_set(bitstr_t* b, bitoff_t bit);
void slurm_bit_free(bitstr_t** b);
bitoff_t bit_size(bitstr_t* b) { return slurm_bit_size(b); }
int bit_test(bitstr_t* b, bitoff_t bit) { return slurm_bit_test(b, bit); }
}

namespace sp {
namespace {

constexpr int kGpuPos = 1;

class QuotaAdapterPasses : public ::testing::Test {
 protected:
  void SetUp() override {
    policy = policy_of(load_policy_text("{}\n", "unit.yaml"));
    ASSERT_NE(policy, nullptr);
    // One QOS that preempts within itself by priority: Slurm's rules alone allow it.
    qos.id = 5;
    qos.name = const_cast<char*>("standby");
    qos.preempt_mode = PREEMPT_MODE_REQUEUE | PREEMPT_MODE_WITHIN;
    victim.job_id = 10;
    victim.job_state = JOB_RUNNING;
    victim.qos_ptr = &qos;
    victim.priority = 1;
    victim.tres_alloc_cnt = victim_tres;
    preemptor.job_id = 20;
    preemptor.job_state = JOB_PENDING;
    preemptor.qos_ptr = &qos;
    preemptor.priority = 2;
    preemptor.tres_req_cnt = preemptor_tres;
    g_jobs = {{victim.job_id, &victim}, {preemptor.job_id, &preemptor}};
  }
  void TearDown() override { g_jobs.clear(); }

  // One sweep (a new last_job_update each) from the calling thread.
  QuotaSweeps::PassNote sweep() {
    QuotaSweeps::PassNote note;
    EXPECT_NE(sweeps.preemptable(policy, victim, preemptor, kGpuPos, ++update, &note),
              PreemptReason::None);
    return note;
  }
  QuotaSweeps::PassNote sweep_from_another_thread() {
    QuotaSweeps::PassNote note;
    std::thread([&] { note = sweep(); }).join();
    return note;
  }

  std::shared_ptr<const Policy> policy;
  slurmdb_qos_rec_t qos{};
  uint64_t victim_tres[2] = {1, 2};
  uint64_t preemptor_tres[2] = {1, 2};
  job_record_t victim{};
  job_record_t preemptor{};
  QuotaSweeps sweeps;
  time_t update = 1000;
};

TEST_F(QuotaAdapterPasses, WithoutThePassThreadTheFirstSightingAsksAtOnceAndNeverAgain) {
  const auto first = sweep();
  EXPECT_TRUE(first.ask_now);
  EXPECT_FALSE(first.deferred || first.settled);
  EXPECT_EQ(sweeps.take_due_passes(steady_ms() + 60'000).size(), 0u);  // nothing waits
  const auto again = sweep_from_another_thread();
  EXPECT_FALSE(again.ask_now || again.deferred || again.settled);
}

TEST_F(QuotaAdapterPasses, DeferredTheFirstSightingWaitsAndIsDueAfterTheDelay) {
  sweeps.defer_passes(true);
  const int64_t before = steady_ms();
  const auto first = sweep();
  EXPECT_TRUE(first.deferred);
  EXPECT_FALSE(first.ask_now || first.settled);
  EXPECT_EQ(sweeps.take_due_passes(before).size(), 0u);
  const int64_t wait = sweeps.next_pass_due_ms(before);
  EXPECT_GE(wait, PassRequests::kDelayMs);
  const auto due = sweeps.take_due_passes(steady_ms() + PassRequests::kDelayMs);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].preemptor, 20u);
  EXPECT_EQ(due[0].victim, 10u);
  EXPECT_EQ(sweeps.next_pass_due_ms(steady_ms()), -1);
}

TEST_F(QuotaAdapterPasses, TheSameThreadsNextSweepDoesNotSettleIt) {
  sweeps.defer_passes(true);
  ASSERT_TRUE(sweep().deferred);
  const auto again = sweep();
  EXPECT_FALSE(again.ask_now || again.deferred || again.settled);
  EXPECT_EQ(sweeps.take_due_passes(steady_ms() + PassRequests::kDelayMs).size(), 1u);
}

TEST_F(QuotaAdapterPasses, AnotherThreadsSweepSettlesItAndNoPassIsDue) {
  sweeps.defer_passes(true);
  ASSERT_TRUE(sweep().deferred);
  const auto tested = sweep_from_another_thread();
  EXPECT_TRUE(tested.settled);
  EXPECT_FALSE(tested.ask_now || tested.deferred);
  EXPECT_EQ(tested.waiting.preemptor, 20u);
  EXPECT_EQ(tested.waiting.victim, 10u);
  EXPECT_EQ(sweeps.take_due_passes(steady_ms() + PassRequests::kDelayMs).size(), 0u);
}

TEST_F(QuotaAdapterPasses, AGraceStartedInTheSweepSettlesItsPreemptor) {
  sweeps.defer_passes(true);
  ASSERT_TRUE(sweep().deferred);
  const auto settled = sweeps.grace_started();
  ASSERT_TRUE(settled.has_value());
  EXPECT_EQ(settled->preemptor, 20u);
  EXPECT_FALSE(sweeps.grace_started().has_value());  // once
  EXPECT_EQ(sweeps.take_due_passes(steady_ms() + PassRequests::kDelayMs).size(), 0u);
}

// Owner traffic leaves a claim entry for each running standby job an owner's sweep saw; each
// later sweep (one or more per submission) asked Slurm about every entry.
TEST_F(QuotaAdapterPasses, ASweepDoesNotLookUpEveryVictimItKnows) {
  std::vector<job_record_t> victims(50, victim);
  for (std::size_t i = 0; i < victims.size(); ++i) {
    victims[i].job_id = static_cast<uint32_t>(100 + i);
    g_jobs[victims[i].job_id] = &victims[i];
  }
  ++update;
  for (auto& v : victims) {  // one sweep that sees all 50 untouched
    ASSERT_NE(sweeps.preemptable(policy, v, preemptor, kGpuPos, update), PreemptReason::None);
  }
  g_lookups = 0;
  for (int i = 0; i < 10; ++i) {  // ten more sweeps
    (void)sweeps.preemptable(policy, victims[0], preemptor, kGpuPos, ++update);
  }
  EXPECT_EQ(sweeps.sweeps(), 11u);
  EXPECT_EQ(g_lookups, 0);
}

// The entries of jobs that stopped running still go, once they doubled.
TEST_F(QuotaAdapterPasses, TheVictimsThatStoppedRunningAreDroppedOnceTheyDoubled) {
  std::vector<job_record_t> victims(ClaimTracker::kPruneSlack + 1, victim);
  for (std::size_t i = 0; i < victims.size(); ++i) {
    victims[i].job_id = static_cast<uint32_t>(100 + i);
    g_jobs[victims[i].job_id] = &victims[i];
  }
  ++update;
  for (auto& v : victims) (void)sweeps.preemptable(policy, v, preemptor, kGpuPos, update);
  for (auto& v : victims) v.job_state = JOB_PENDING;  // all requeued
  g_lookups = 0;
  (void)sweeps.preemptable(policy, victim, preemptor, kGpuPos, ++update);  // the next sweep
  EXPECT_EQ(g_lookups, static_cast<int>(victims.size()));                  // each asked about once
  g_lookups = 0;
  (void)sweeps.preemptable(policy, victim, preemptor, kGpuPos, ++update);
  EXPECT_EQ(g_lookups, 0);  // gone: one entry (job 10) left, no prune due
}

// The queue sort's check (preempt_p_job_preempt_check): the QOS rules first, then, only with
// quotas, the classes; QOS without a class, or without a name, are left to the QOS rules.
class QueuePreempts : public ::testing::Test {
 protected:
  void SetUp() override {
    with_quotas =
        policy_of(load_policy_text("classes:\n"
                                   "  build: {priority: 100, preemptible: false}\n"
                                   "  interactive: {priority: 75, preemptible: true, grace: 30s}\n"
                                   "  train: {priority: 50, preemptible: true, grace: 60s}\n"
                                   "quotas:\n"
                                   "  p0: {gpus: 8}\n",
                                   "unit.yaml"));
    ASSERT_NE(with_quotas, nullptr);
    auto copy = std::make_shared<Policy>(*with_quotas);
    copy->quotas.clear();
    without_quotas = copy;
    const char* const names[] = {"build", "train", "owner", "standby"};
    for (uint32_t i = 0; i < 4; ++i) {
      qos[i].id = i + 1;
      qos[i].name = const_cast<char*>(names[i]);
      jobs[i].job_id = 100 + i;
      jobs[i].job_state = JOB_PENDING;
      jobs[i].qos_ptr = &qos[i];
    }
    // QOS owner's Preempt list holds standby (its id), as sacctmgr sets it.
    qos[2].preempt_bitstr = slurm_bit_alloc(8);
    slurm_bit_set(qos[2].preempt_bitstr, qos[3].id);
  }
  void TearDown() override { slurm_bit_free(&qos[2].preempt_bitstr); }

  std::shared_ptr<const Policy> with_quotas, without_quotas;
  slurmdb_qos_rec_t qos[4]{};
  job_record_t jobs[4]{};
  job_record_t& build = jobs[0];
  job_record_t& train = jobs[1];
  job_record_t& owner = jobs[2];
  job_record_t& standby = jobs[3];
};

TEST_F(QueuePreempts, TheQosRulesDecideFirstWithOrWithoutAPolicy) {
  QueueOrder unset;
  EXPECT_TRUE(queue_preempts(unset, owner, standby));
  EXPECT_FALSE(queue_preempts(unset, standby, owner));
  EXPECT_FALSE(queue_preempts(unset, build, train));  // no policy published: QOS rules only
  QueueOrder order;
  order.set(with_quotas);
  EXPECT_TRUE(queue_preempts(order, owner, standby));
  EXPECT_FALSE(queue_preempts(order, standby, owner));
}

TEST_F(QueuePreempts, WithQuotasAHigherClassGoesBeforeAPreemptibleLowerOne) {
  QueueOrder order;
  order.set(with_quotas);
  // The first round looks the classes up, the second reads what it kept.
  for (int round = 0; round < 2; ++round) {
    EXPECT_TRUE(queue_preempts(order, build, train)) << round;
    EXPECT_FALSE(queue_preempts(order, train, build)) << round;
    EXPECT_FALSE(queue_preempts(order, build, standby)) << round;  // standby: a QOS, no class
    EXPECT_FALSE(queue_preempts(order, train, train)) << round;
  }
}

TEST_F(QueuePreempts, WithoutQuotasOnlyTheQosRulesOrderTheQueue) {
  QueueOrder order;
  order.set(without_quotas);
  EXPECT_FALSE(queue_preempts(order, build, train));  // preempt/qos' order exactly
  EXPECT_TRUE(queue_preempts(order, owner, standby));
  EXPECT_FALSE(queue_preempts(order, standby, owner));
}

TEST_F(QueuePreempts, AQosWithoutANameHasNoClass) {
  QueueOrder order;
  order.set(with_quotas);
  qos[0].name = nullptr;  // id 1, never looked up before
  EXPECT_FALSE(queue_preempts(order, build, train));
  build.qos_ptr = nullptr;
  EXPECT_FALSE(queue_preempts(order, build, train));
  EXPECT_FALSE(queue_preempts(order, train, build));
}

// The victim search's first answer (preempt_p_preemptable): without quotas a job the QOS rules
// do not allow is refused whatever its state; with quotas, or before a policy is published,
// the rest of the check decides.
TEST_F(QueuePreempts, WithoutQuotasTheVictimSearchRefusesWhatTheQosRulesRefuse) {
  QueueOrder order;
  order.set(without_quotas);
  standby.job_state = JOB_RUNNING;
  // owner's Preempt list holds standby: the list is asked, and allows it.
  EXPECT_EQ(first_answer(order, standby, owner), FirstAnswer::AskList);
  EXPECT_TRUE(qos_list_allows(standby, owner));
  EXPECT_EQ(first_answer(order, owner, standby), FirstAnswer::Refuse);
  // No QOS rule: refused, running or not.
  EXPECT_EQ(first_answer(order, train, build), FirstAnswer::Refuse);
  train.job_state = JOB_RUNNING;
  EXPECT_EQ(first_answer(order, train, build), FirstAnswer::Refuse);
  standby.qos_ptr = nullptr;  // preempt/qos refuses a job without a QOS
  EXPECT_EQ(first_answer(order, standby, owner), FirstAnswer::Refuse);
}

// Its three answers, on which preempt_p_preemptable branches without a call: the QOS rules
// refuse (no rule, or the same QOS without WITHIN), ask the preemptor QOS' Preempt list, or
// allow (WITHIN and a higher priority), which leaves the job's state to decide.
TEST_F(QueuePreempts, WithoutQuotasTheFirstAnswerRefusesAsksTheListOrLeavesItToTheRest) {
  QueueOrder order;
  order.set(without_quotas);
  EXPECT_EQ(first_answer(order, standby, owner), FirstAnswer::AskList);  // owner has a list
  EXPECT_TRUE(qos_list_allows(standby, owner));
  EXPECT_EQ(first_answer(order, owner, standby), FirstAnswer::Refuse);  // standby has none
  EXPECT_EQ(first_answer(order, train, build), FirstAnswer::Refuse);
  EXPECT_EQ(first_answer(order, standby, standby), FirstAnswer::Refuse);  // same QOS, no WITHIN
  slurmdb_qos_rec_t* own = owner.qos_ptr;
  own->preempt_mode |= PREEMPT_MODE_WITHIN;
  job_record_t higher = owner;
  higher.priority = owner.priority + 1;
  EXPECT_EQ(first_answer(order, owner, higher), FirstAnswer::Rest);
  EXPECT_EQ(first_answer(order, higher, owner), FirstAnswer::Refuse);
  own->preempt_mode &= static_cast<uint16_t>(~PREEMPT_MODE_WITHIN);
  // A list that does not hold the victim's QOS (or is shorter than its id): refused.
  EXPECT_EQ(first_answer(order, train, owner), FirstAnswer::AskList);
  EXPECT_FALSE(qos_list_allows(train, owner));
  train.qos_ptr->id = 9;  // past the list's 8 bits: not read
  EXPECT_FALSE(qos_list_allows(train, owner));
  train.qos_ptr->id = 2;
  QueueOrder unset;
  EXPECT_EQ(first_answer(unset, owner, standby), FirstAnswer::Rest);
  QueueOrder quotas;
  quotas.set(with_quotas);
  EXPECT_EQ(first_answer(quotas, owner, standby), FirstAnswer::Rest);
}

TEST_F(QueuePreempts, WithQuotasOrNoPolicyTheVictimSearchLeavesItToTheRest) {
  QueueOrder unset;
  EXPECT_EQ(first_answer(unset, owner, standby), FirstAnswer::Rest);
  QueueOrder order;
  order.set(with_quotas);
  EXPECT_EQ(first_answer(order, train, build), FirstAnswer::Rest);  // a class or a quota may decide
  EXPECT_EQ(first_answer(order, owner, standby), FirstAnswer::Rest);
  EXPECT_EQ(first_answer(order, standby, owner), FirstAnswer::Rest);
}

// PREEMPT_DATA_PRIO with the anti-starvation rules: a job whose story (AdminComment) notes
// max_preemptions preemptions within the window is taken last. Slurm's victim sort asks it of
// both jobs at each comparison; the answer read from a story is kept while the story and the
// second stay, and read again when either moves.
class QuotaAdapterRank : public QuotaAdapterPasses {
 protected:
  void SetUp() override {
    QuotaAdapterPasses::SetUp();
    policy = policy_of(load_policy_text(
        "starvation: {max_preemptions: 2, window: 1h, protect_for: 10m}\n", "unit.yaml"));
    ASSERT_NE(policy, nullptr);
    sweep();  // the sweeps take the policy at a sweep's start
  }
  static std::string preempted_at(const char* utc) {
    return std::string("slurm-preempt: preempted at ") + utc +
           " by JobId=7 (qos owner, account own1, owner reclaim): signal USR1, grace 5 s; ";
  }
  static constexpr time_t kAt = 1796126400;  // 2026-12-01T12:00:00Z
};

TEST_F(QuotaAdapterRank, AJobPreemptedTooOftenIsRankedLastUntilItsProtectionEnds) {
  std::string story = preempted_at("2026-12-01T11:30:00Z") + preempted_at("2026-12-01T12:00:00Z");
  victim.admin_comment = story.data();
  EXPECT_EQ(sweeps.rank(victim, kAt + 60), kStarvingRank);
  EXPECT_EQ(sweeps.rank(victim, kAt + 60), kStarvingRank);   // the kept answer
  EXPECT_NE(sweeps.rank(victim, kAt + 601), kStarvingRank);  // a new second: read again
  victim.admin_comment = nullptr;
}

TEST_F(QuotaAdapterRank, AStoryThatGrewIsReadAgainWithinTheSameSecond) {
  std::string story = preempted_at("2026-12-01T11:30:00Z");
  story.reserve(4096);  // the note appended in place: the same address, a longer text
  victim.admin_comment = story.data();
  const uint32_t once = sweeps.rank(victim, kAt + 60);
  EXPECT_NE(once, kStarvingRank);
  story += preempted_at("2026-12-01T12:00:00Z");
  ASSERT_EQ(victim.admin_comment, story.data());
  EXPECT_EQ(sweeps.rank(victim, kAt + 60), kStarvingRank);
  victim.admin_comment = nullptr;
  EXPECT_EQ(sweeps.rank(victim, kAt + 60), once);  // no story: no protection
}

TEST_F(QuotaAdapterRank, ANewStoryAtAnotherAddressIsReadAgain) {
  std::string twice = preempted_at("2026-12-01T11:30:00Z") + preempted_at("2026-12-01T12:00:00Z");
  std::string once = preempted_at("2026-12-01T12:00:00Z");
  victim.admin_comment = twice.data();
  EXPECT_EQ(sweeps.rank(victim, kAt + 60), kStarvingRank);
  victim.admin_comment = once.data();
  EXPECT_NE(sweeps.rank(victim, kAt + 60), kStarvingRank);
  victim.admin_comment = nullptr;
}

TEST_F(QuotaAdapterRank, AReloadWithoutTheRulesRanksByQosAgain) {
  std::string story = preempted_at("2026-12-01T11:30:00Z") + preempted_at("2026-12-01T12:00:00Z");
  victim.admin_comment = story.data();
  EXPECT_EQ(sweeps.rank(victim, kAt + 60), kStarvingRank);
  policy = policy_of(load_policy_text("{}\n", "unit.yaml"));
  sweep();
  EXPECT_NE(sweeps.rank(victim, kAt + 60), kStarvingRank);
  victim.admin_comment = nullptr;
}

// Under quotas a candidate ranks by its class (by QOS name); without quotas the classes do not
// rank, Slurm's QOS priority does (victim_rank), whatever classes the policy names.
TEST_F(QuotaAdapterRank, ClassesRankUnderQuotasAndQosPriorityWithoutThem) {
  slurmdb_qos_rec_t train{};
  train.name = const_cast<char*>("train");
  train.priority = 100;
  slurmdb_qos_rec_t interactive{};
  interactive.name = const_cast<char*>("interactive");
  interactive.priority = 10;
  job_record_t a = victim;
  a.qos_ptr = &train;
  job_record_t b = victim;
  b.qos_ptr = &interactive;
  const std::string classes =
      "classes:\n  train: {priority: 50, min_runtime: 0}\n"
      "  interactive: {priority: 75, min_runtime: 0}\n";
  policy = policy_of(load_policy_text(classes + "quotas:\n  project-a: {gpus: 4}\n", "unit.yaml"));
  ASSERT_NE(policy, nullptr);
  sweep();
  EXPECT_LT(sweeps.rank(a, kAt), sweeps.rank(b, kAt));  // train is taken before interactive
  policy = policy_of(load_policy_text(classes, "unit.yaml"));
  ASSERT_NE(policy, nullptr);
  sweep();
  EXPECT_GT(sweeps.rank(a, kAt), sweeps.rank(b, kAt));  // QOS priority 100 against 10
}

}  // namespace
}  // namespace sp

namespace sp {
namespace {

// A victim Slurm set a preempt time for is in a grace (taken first, claimed by its preemptor),
// unless the gang scheduler suspended it then: resumed, it keeps that time and is a victim as
// any other running job.
TEST(QuotaAdapterGrace, APreemptTimeOfAGangSuspensionIsNoGrace) {
  const uint16_t conf = slurm_conf.preempt_mode;
  job_record_t job{};
  slurmdb_qos_rec_t qos{};
  job.qos_ptr = &qos;
  qos.preempt_mode = PREEMPT_MODE_SUSPEND;
  slurm_conf.preempt_mode = PREEMPT_MODE_REQUEUE | PREEMPT_MODE_GANG;
  EXPECT_FALSE(in_grace(job));  // never preempted
  job.preempt_time = 1500;
  EXPECT_FALSE(in_grace(job));
  qos.preempt_mode = PREEMPT_MODE_REQUEUE;
  EXPECT_TRUE(in_grace(job));
  qos.preempt_mode = 0;  // the cluster's mode: REQUEUE
  EXPECT_TRUE(in_grace(job));
  slurm_conf.preempt_mode = PREEMPT_MODE_SUSPEND | PREEMPT_MODE_GANG;
  EXPECT_FALSE(in_grace(job));
  qos.preempt_mode = PREEMPT_MODE_SUSPEND;
  slurm_conf.preempt_mode = PREEMPT_MODE_REQUEUE;  // no GANG: Slurm cancels it, after a grace
  EXPECT_TRUE(in_grace(job));
  slurm_conf.preempt_mode = conf;
}

}  // namespace
}  // namespace sp
