// Google Benchmark over lib/: the costs that sit on slurmctld's hot paths.
//   ./bench/bench_lib                 (after make; scripts/bench runs it with the right flags)
//
// BM_DecideStream times each of 100k synthetic submissions through decide() and reports the
// per-call p50 and p99 (ns) and heap allocations per accepted decision. The global operator
// new below counts allocations for the whole program.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

#include "decide.hpp"
#include "policy_loader.hpp"
#include "priority.hpp"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

const char* kPolicy = SP_SOURCE_DIR "/etc/preempt.yaml";

std::shared_ptr<const sp::Policy> example_policy() {
  return sp::policy_of(sp::load_policy_file(kPolicy));
}

// A stream like a busy cluster's: mostly normal and standby jobs, some owners, a few
// submissions that are rejected (standby in an owner partition, walltime over the limit).
std::vector<sp::SubmitView> synthetic_jobs(std::size_t n) {
  static const char* const kQos[] = {"", "normal", "standby", "standby", "owner", "debug"};
  static const char* const kParts[] = {"", "", "public", "standby", "chem", "public,standby"};
  std::mt19937 rng(42);
  std::vector<sp::SubmitView> jobs(n);
  for (auto& j : jobs) {
    j.user_id = 1000 + rng() % 500;
    j.qos = kQos[rng() % std::size(kQos)];
    j.partition = kParts[rng() % std::size(kParts)];
    j.requeue = static_cast<sp::Tristate>(rng() % 3);
    j.time_limit_min = static_cast<uint32_t>(rng() % (3 * 24 * 60));
    j.min_nodes = 1 + rng() % 4;
  }
  return jobs;
}

void BM_DecideStream(benchmark::State& state) {
  const auto policy = example_policy();
  const auto jobs = synthetic_jobs(100'000);
  std::vector<uint64_t> ns(jobs.size());
  uint64_t accepted = 0, accept_allocs = 0, rejected = 0;
  for (auto _ : state) {
    accepted = accept_allocs = rejected = 0;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const uint64_t before = g_allocations.load(std::memory_order_relaxed);
      const auto t0 = std::chrono::steady_clock::now();
      sp::SubmitDecision d = sp::decide(jobs[i], *policy, 1'700'000'000);
      const auto t1 = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(d);
      ns[i] = static_cast<uint64_t>(std::chrono::nanoseconds(t1 - t0).count());
      if (d.accepted()) {
        ++accepted;
        accept_allocs += g_allocations.load(std::memory_order_relaxed) - before;
      } else {
        ++rejected;
      }
    }
  }
  std::sort(ns.begin(), ns.end());
  state.counters["p50_ns"] = static_cast<double>(ns[ns.size() / 2]);
  state.counters["p99_ns"] = static_cast<double>(ns[ns.size() * 99 / 100]);
  state.counters["max_ns"] = static_cast<double>(ns.back());
  state.counters["allocs_per_accept"] =
      accepted ? static_cast<double>(accept_allocs) / static_cast<double>(accepted) : 0;
  state.counters["reject_pct"] = 100.0 * static_cast<double>(rejected) / jobs.size();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * jobs.size()));
}
BENCHMARK(BM_DecideStream)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_DecideAccept(benchmark::State& state) {
  const auto policy = example_policy();
  sp::SubmitView job;
  job.qos = "standby";
  job.partition = "standby";
  job.requeue = sp::Tristate::Yes;
  job.time_limit_min = 600;
  for (auto _ : state) {
    auto d = sp::decide(job, *policy, 1'700'000'000);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_DecideAccept);

void BM_LoadPolicy(benchmark::State& state) {
  for (auto _ : state) {
    auto r = sp::load_policy_file(kPolicy);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_LoadPolicy)->Unit(benchmark::kMicrosecond);

void BM_PriorityTerms(benchmark::State& state) {
  const auto policy = example_policy();
  const sp::Weights w = sp::effective_weights(policy->priority, {});
  sp::PriorityInput in;
  in.accrue_time = 1'700'000'000 - 3600;
  in.qos_norm = 0.5;
  in.partition_norm = 1;
  in.boost = 1000;
  int64_t now = 1'700'000'000;
  for (auto _ : state) {
    uint32_t p = sp::priority_value(sp::priority_terms(in, w, ++now));
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_PriorityTerms);

}  // namespace

BENCHMARK_MAIN();
