// priority/fairshare's usage pass, plugin code included (issue 15): UsageTracker as the
// recalculation thread runs it, over real slurmdb_assoc_rec_t and job_record_t layouts in
// assoc_mgr's own list, the layout of bench/scale.py's cluster (a root, --accounts accounts,
// one user association under each) and its running jobs (two per account), nine TRES.
//
// BM_UsagePass: the whole pass, as one hold of assoc_mgr's write locks did it before bd6beff
// (prepare() then apply() back to back). BM_UsagePrepare: the part done under assoc_mgr's read
// locks. BM_UsageApply: the part done under its write locks, the hold that counts for the
// issue's "longest write-lock hold" (each iteration prepares first, outside the timing).
// Counters: per-pass p50/p99 (steady_clock) and heap allocations per pass.
//
// calc_job_billable_tres (slurmctld's job_mgr.c) is provided here with Slurm's cached path
// (a running job's billable TRES are set at its start); everything else is libslurmfull's.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "alloc_count.hpp"
#include "log.hpp"
#include "usage.hpp"

extern "C" {
#include "src/common/assoc_mgr.h"
#include "src/common/list.h"
}

extern "C" {
int slurmctld_tres_cnt = 9;
List job_list = nullptr;
double calc_job_billable_tres(job_record_t* job_ptr, time_t /*start_time*/,
                              bool /*assoc_mgr_locked*/) {
  return job_ptr->billable_tres;
}
}

namespace {

constexpr int kTres = 9;
constexpr int64_t kT0 = 1'700'000'000;

class NullLog : public sp::LogSink {
 public:
  void write(sp::LogLevel /*level*/, std::string_view /*message*/) override {}
};

struct World {
  std::vector<std::unique_ptr<slurmdb_assoc_rec_t>> assocs;
  std::vector<std::unique_ptr<slurmdb_assoc_usage_t>> usages;
  std::vector<std::unique_ptr<std::array<long double, kTres>>> tres_raw;
  std::vector<std::unique_ptr<std::array<uint64_t, kTres>>> run_secs;
  std::vector<std::string> names;
  slurmdb_qos_rec_t qos{};
  slurmdb_qos_usage_t qos_usage{};
  std::array<long double, kTres> qos_tres_raw{};
  std::array<uint64_t, kTres> qos_run_secs{};
  std::vector<job_record_t> jobs;
  std::vector<std::array<uint64_t, kTres>> job_tres;
  std::vector<job_record_t*> running;
};

slurmdb_assoc_rec_t* new_assoc(World& w, uint32_t id, const char* acct, const char* user,
                               slurmdb_assoc_rec_t* parent) {
  auto a = std::make_unique<slurmdb_assoc_rec_t>();
  auto u = std::make_unique<slurmdb_assoc_usage_t>();
  auto raw = std::make_unique<std::array<long double, kTres>>();
  auto secs = std::make_unique<std::array<uint64_t, kTres>>();
  raw->fill(1e6L);
  secs->fill(1'000'000'000ULL);
  a->id = id;
  a->acct = const_cast<char*>(acct);
  a->user = const_cast<char*>(user);
  a->shares_raw = 1;
  u->usage_raw = 1e6L * id;
  u->usage_tres_raw = raw->data();
  u->grp_used_tres_run_secs = secs->data();
  u->parent_assoc_ptr = parent;
  u->fs_assoc_ptr = parent;
  u->level_shares = 1;
  u->shares_norm = 0.005;
  a->usage = u.get();
  slurmdb_assoc_rec_t* out = a.get();
  list_append(assoc_mgr_assoc_list, out);
  w.assocs.push_back(std::move(a));
  w.usages.push_back(std::move(u));
  w.tres_raw.push_back(std::move(raw));
  w.run_secs.push_back(std::move(secs));
  return out;
}

World& world(int accounts) {
  static World* w = [accounts] {
    auto* w = new World;
    slurm_conf.state_save_location = const_cast<char*>("/nonexistent-bench-usage");
    slurm_conf.accounting_storage_enforce = ACCOUNTING_ENFORCE_LIMITS;
    assoc_mgr_assoc_list = list_create(nullptr);
    job_list = list_create(nullptr);
    w->names.reserve(static_cast<std::size_t>(accounts) + 1);
    w->names.emplace_back("root");
    for (int i = 0; i < accounts; ++i) w->names.push_back("a" + std::to_string(i));
    slurmdb_assoc_rec_t* root = new_assoc(*w, 1, w->names[0].c_str(), nullptr, nullptr);
    assoc_mgr_root_assoc = root;
    std::vector<slurmdb_assoc_rec_t*> users;
    for (int i = 0; i < accounts; ++i) {
      const char* acct = w->names[static_cast<std::size_t>(i) + 1].c_str();
      slurmdb_assoc_rec_t* a = new_assoc(*w, static_cast<uint32_t>(2 + 2 * i), acct, nullptr, root);
      users.push_back(new_assoc(*w, static_cast<uint32_t>(3 + 2 * i), acct, "root", a));
    }
    w->qos.name = const_cast<char*>("standby");
    w->qos.usage_factor = 1.0;
    w->qos_usage.usage_tres_raw = w->qos_tres_raw.data();
    w->qos_usage.grp_used_tres_run_secs = w->qos_run_secs.data();
    w->qos_run_secs.fill(1'000'000'000'000ULL);
    w->qos.usage = &w->qos_usage;
    const std::size_t n = 2 * static_cast<std::size_t>(accounts);
    w->jobs.resize(n);
    w->job_tres.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      job_record_t& j = w->jobs[i];
      j.job_id = static_cast<uint32_t>(i + 1);
      j.job_state = JOB_RUNNING;
      j.assoc_ptr = users[i % users.size()];
      j.qos_ptr = &w->qos;
      j.start_time = static_cast<time_t>(kT0 - 600 + static_cast<int64_t>(i % 500));
      j.end_time_exp = static_cast<time_t>(kT0 + 86400);
      j.time_limit = 60;
      j.billable_tres = 2;
      w->job_tres[i] = {2, 1024, 0, 1, 2, 0, 0, 0, 1};
      j.tres_alloc_cnt = w->job_tres[i].data();
      list_append(job_list, &j);
      w->running.push_back(&j);
    }
    return w;
  }();
  return *w;
}

sp::Weights weights() {
  sp::Weights wt;
  wt.fairshare = 10000;
  wt.half_life_s = 7 * 86400;
  return wt;
}

void report(benchmark::State& state, std::vector<uint64_t>& ns, uint64_t allocs) {
  std::sort(ns.begin(), ns.end());
  state.counters["p50_us"] = static_cast<double>(ns[ns.size() / 2]) / 1000.0;
  state.counters["p99_us"] = static_cast<double>(ns[ns.size() * 99 / 100]) / 1000.0;
  state.counters["allocs_per_pass"] = static_cast<double>(allocs) / static_cast<double>(ns.size());
}

// Which part of the pass each benchmark times.
enum class Part { kWhole, kPrepare, kApply };

void run(benchmark::State& state, Part part) {
  World& w = world(static_cast<int>(state.range(0)));
  NullLog log;
  sp::UsageTracker tracker(log, kT0);
  const sp::Weights wt = weights();
  int64_t now = kT0;
  std::vector<uint64_t> ns;
  uint64_t allocs = 0;
  for (auto _ : state) {
    now += 60;
    if (part == Part::kApply) {
      state.PauseTiming();
      tracker.prepare(now, wt, 0.0, w.running);
      state.ResumeTiming();
    }
    const uint64_t before = g_allocations.load(std::memory_order_relaxed);
    const auto t0 = std::chrono::steady_clock::now();
    switch (part) {
      case Part::kWhole:
        tracker.prepare(now, wt, 0.0, w.running);
        tracker.apply();
        break;
      case Part::kPrepare: tracker.prepare(now, wt, 0.0, w.running); break;
      case Part::kApply: tracker.apply(); break;
    }
    const auto t1 = std::chrono::steady_clock::now();
    allocs += g_allocations.load(std::memory_order_relaxed) - before;
    ns.push_back(static_cast<uint64_t>(std::chrono::nanoseconds(t1 - t0).count()));
  }
  report(state, ns, allocs);
}

void BM_UsagePass(benchmark::State& state) { run(state, Part::kWhole); }
void BM_UsagePrepare(benchmark::State& state) { run(state, Part::kPrepare); }
void BM_UsageApply(benchmark::State& state) { run(state, Part::kApply); }

// 200 accounts: bench/scale.py's default (401 associations, 400 running jobs).
BENCHMARK(BM_UsagePass)->Arg(200)->Unit(benchmark::kMicrosecond)->Iterations(2000);
BENCHMARK(BM_UsagePrepare)->Arg(200)->Unit(benchmark::kMicrosecond)->Iterations(2000);
BENCHMARK(BM_UsageApply)->Arg(200)->Unit(benchmark::kMicrosecond)->Iterations(2000);

}  // namespace

BENCHMARK_MAIN();
