// Google Benchmark over lib/: the costs that sit on slurmctld's hot paths.
//   ./bench/bench_lib              (after make)
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "decide.hpp"
#include "policy_loader.hpp"
#include "priority.hpp"

namespace {

const char* kPolicy = SP_SOURCE_DIR "/etc/preempt.yaml";

void BM_LoadPolicy(benchmark::State& state) {
  for (auto _ : state) {
    auto r = sp::load_policy_file(kPolicy);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_LoadPolicy);

void BM_DecideSubmit(benchmark::State& state) {
  auto policy = sp::policy_of(sp::load_policy_file(kPolicy));
  const std::vector<const char*> qos = {"", "normal", "standby", "owner"};
  std::vector<sp::SubmitView> jobs(1024);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].qos = qos[i % qos.size()];
    jobs[i].requeue = i % 3 ? sp::Tristate::Yes : sp::Tristate::Unset;
    jobs[i].time_limit_min = static_cast<uint32_t>(i % 600);
  }
  std::size_t i = 0;
  for (auto _ : state) {
    auto d = sp::decide(jobs[i++ & 1023], *policy, 1'700'000'000);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_DecideSubmit);

void BM_FifoPriority(benchmark::State& state) {
  uint32_t last = 100'000'000;
  for (auto _ : state) {
    last = sp::fifo_priority(last, 0);
    benchmark::DoNotOptimize(last);
  }
}
BENCHMARK(BM_FifoPriority);

}  // namespace

BENCHMARK_MAIN();
