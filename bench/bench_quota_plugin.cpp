// preempt/quota's per-call cost, plugin code included (issue 13): QuotaSweeps::preemptable, as
// preempt_p_preemptable runs it, over real job_record_t layouts. 10k running jobs of 1k
// projects, one pending preemptor; Slurm calls the plugin for every job of the job list under
// its write locks, so one sweep = one call per running job.
//
// BM_QueueCheck / BM_QueueCheckByStore: the queue sort's check, now and before (below);
// BM_QueueCheckQosAlone / BM_QueueCheckQosRules: the same without quotas, and stock's check.
//
// BM_PluginSweep: a new sweep every pass (a new preemptor each time: the worst case, as the
// first call of each sweep revalidates the known running jobs through the job hash and builds
// the quota snapshot). BM_PluginCallSteady: repeated calls within one sweep (what every call
// but the first costs). Counters: per-call p50/p99 (steady_clock around each call, included),
// allocations per call, the first call's cost.
//
// Slurm's job hash (find_job_record, slurmctld's job_mgr.c) is provided here as an
// unordered_map lookup; everything else is libslurmfull's.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "alloc_count.hpp"
#include "policy_loader.hpp"
#include "quota_adapter.hpp"

namespace {
std::unordered_map<uint32_t, job_record_t*> g_hash;
}  // namespace

extern "C" job_record_t* find_job_record(uint32_t job_id) {
  auto it = g_hash.find(job_id);
  return it == g_hash.end() ? nullptr : it->second;
}

namespace {

constexpr int kGpuPos = 1;

struct World {
  std::shared_ptr<const sp::Policy> policy;
  std::vector<slurmdb_qos_rec_t> qos;  // one per class
  part_record_t part{};
  std::vector<std::string> accounts;
  std::vector<std::array<uint64_t, 2>> tres;
  std::vector<job_record_t> jobs;  // running
  std::vector<job_record_t> preemptors;
};

World& world() {
  static World* w = [] {
    auto* w = new World;
    std::string text =
        "classes:\n"
        "  inference:   {priority: 125, preemptible: false}\n"
        "  build:       {priority: 100, preemptible: false}\n"
        "  interactive: {priority: 75,  preemptible: true, grace: 30s}\n"
        "  train:       {priority: 50,  preemptible: true, grace: 60s}\n"
        "quotas:\n";
    for (int i = 0; i < 1000; ++i) text += "  p" + std::to_string(i) + ": {gpus: 8}\n";
    w->policy = sp::policy_of(sp::load_policy_text(text, "bench.yaml"));
    static const char* const kClasses[] = {"inference", "build", "interactive", "train"};
    w->qos.resize(4);
    for (uint32_t i = 0; i < 4; ++i) {
      w->qos[i].name = const_cast<char*>(kClasses[i]);
      w->qos[i].id = i + 10;
      w->qos[i].priority = 100;
    }
    w->part.name = const_cast<char*>("pool");
    for (int i = 0; i < 1000; ++i) w->accounts.push_back("p" + std::to_string(i));
    std::mt19937 rng(7);
    const std::size_t n = 10'000;
    w->tres.resize(n + 100);
    w->jobs.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      job_record_t& j = w->jobs[i];
      j.job_id = static_cast<uint32_t>(i + 1);
      j.job_state = JOB_RUNNING;
      j.account = w->accounts[rng() % 1000].data();
      j.qos_ptr = &w->qos[rng() % 4];
      j.part_ptr = &w->part;
      w->tres[i] = {1, 1 + rng() % 8};
      j.tres_alloc_cnt = w->tres[i].data();
      j.start_time = static_cast<time_t>(1'700'000'000 - static_cast<int64_t>(rng() % 86400));
      j.node_cnt = 1;
      g_hash[j.job_id] = &j;
    }
    w->preemptors.resize(100);
    for (std::size_t i = 0; i < 100; ++i) {
      job_record_t& p = w->preemptors[i];
      p.job_id = static_cast<uint32_t>(100'000 + i);
      p.job_state = JOB_PENDING;
      p.account = w->accounts[i % 1000].data();
      p.qos_ptr = &w->qos[1];  // build: reclaims within its quota
      p.part_ptr = &w->part;
      w->tres[n + i] = {1, 4};
      p.tres_req_cnt = w->tres[n + i].data();
      g_hash[p.job_id] = &p;
    }
    return w;
  }();
  return *w;
}

void report(benchmark::State& state, std::vector<uint64_t>& ns, uint64_t allocs, uint64_t calls) {
  std::sort(ns.begin(), ns.end());
  state.counters["p50_ns"] = static_cast<double>(ns[ns.size() / 2]);
  state.counters["p99_ns"] = static_cast<double>(ns[ns.size() * 99 / 100]);
  state.counters["allocs_per_call"] = static_cast<double>(allocs) / static_cast<double>(calls);
}

void BM_PluginSweep(benchmark::State& state) {
  World& w = world();
  sp::QuotaSweeps sweeps;
  std::vector<uint64_t> ns;
  std::vector<uint64_t> first_ns;
  uint64_t allocs = 0, calls = 0;
  std::size_t round = 0;
  time_t update = 1;
  for (auto _ : state) {
    const job_record_t& preemptor = w.preemptors[round++ % w.preemptors.size()];
    ++update;  // a job started or ended since the last sweep
    for (const job_record_t& victim : w.jobs) {
      const uint64_t before = g_allocations.load(std::memory_order_relaxed);
      const auto t0 = std::chrono::steady_clock::now();
      const sp::PreemptReason r = sweeps.preemptable(w.policy, victim, preemptor, kGpuPos, update);
      const auto t1 = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(r);
      allocs += g_allocations.load(std::memory_order_relaxed) - before;
      ++calls;
      const auto d = static_cast<uint64_t>(std::chrono::nanoseconds(t1 - t0).count());
      (&victim == &w.jobs.front() ? first_ns : ns).push_back(d);
    }
  }
  report(state, ns, allocs, calls);
  std::sort(first_ns.begin(), first_ns.end());
  state.counters["first_call_us"] = static_cast<double>(first_ns[first_ns.size() / 2]) / 1000.0;
  state.counters["known_running"] = static_cast<double>(sweeps.known_running());
  state.SetItemsProcessed(static_cast<int64_t>(calls));
}
BENCHMARK(BM_PluginSweep)->Unit(benchmark::kMillisecond)->Iterations(20);

void BM_PluginCallSteady(benchmark::State& state) {
  World& w = world();
  sp::QuotaSweeps sweeps;
  const job_record_t& preemptor = w.preemptors[0];
  for (const job_record_t& victim : w.jobs) {  // one whole sweep first: the snapshot is built
    benchmark::DoNotOptimize(sweeps.preemptable(w.policy, victim, preemptor, kGpuPos, 1));
  }
  std::vector<uint64_t> ns;
  uint64_t allocs = 0, calls = 0;
  for (auto _ : state) {
    for (std::size_t i = 1; i < w.jobs.size(); ++i) {  // never the first job: no new sweep
      const uint64_t before = g_allocations.load(std::memory_order_relaxed);
      const auto t0 = std::chrono::steady_clock::now();
      const sp::PreemptReason r = sweeps.preemptable(w.policy, w.jobs[i], preemptor, kGpuPos, 1);
      const auto t1 = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(r);
      allocs += g_allocations.load(std::memory_order_relaxed) - before;
      ++calls;
      ns.push_back(static_cast<uint64_t>(std::chrono::nanoseconds(t1 - t0).count()));
    }
  }
  report(state, ns, allocs, calls);
  state.SetItemsProcessed(static_cast<int64_t>(calls));
}
BENCHMARK(BM_PluginCallSteady)->Unit(benchmark::kMillisecond)->Iterations(20);

// The queue sort's check (preempt_p_job_preempt_check) with quotas, as Slurm's
// sort_job_queue2 asks it: both ways for each compared pair of pending jobs, here 10k pairs
// of the world's jobs (four classes) per iteration, no QOS Preempt lists (so the classes
// decide). BM_QueueCheck: queue_preempts through QueueOrder, as the plugin answers now.
// BM_QueueCheckByStore: the plugin's answer before (the policy store's mutex and shared_ptr
// copy, then each job's class by name), kept here as the reference. items = calls.
void BM_QueueCheck(benchmark::State& state) {
  World& w = world();
  sp::QueueOrder order;
  order.set(w.policy);
  uint64_t calls = 0;
  for (auto _ : state) {
    for (std::size_t i = 1; i < w.jobs.size(); ++i) {
      benchmark::DoNotOptimize(sp::queue_preempts(order, w.jobs[i - 1], w.jobs[i]));
      benchmark::DoNotOptimize(sp::queue_preempts(order, w.jobs[i], w.jobs[i - 1]));
      calls += 2;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(calls));
}
BENCHMARK(BM_QueueCheck)->Unit(benchmark::kMicrosecond);

void BM_QueueCheckByStore(benchmark::State& state) {
  World& w = world();
  std::mutex m;
  const std::shared_ptr<const sp::Policy> store = w.policy;
  const auto check = [&](const job_record_t& er, const job_record_t& ee) {
    if (sp::qos_preemptable(ee, er)) return true;
    std::shared_ptr<const sp::Policy> policy;
    {
      const std::lock_guard<std::mutex> lk(m);
      policy = store;
    }
    return sp::preempts_in_queue(false, sp::job_class(*policy, er), sp::job_class(*policy, ee),
                                 *policy);
  };
  uint64_t calls = 0;
  for (auto _ : state) {
    for (std::size_t i = 1; i < w.jobs.size(); ++i) {
      benchmark::DoNotOptimize(check(w.jobs[i - 1], w.jobs[i]));
      benchmark::DoNotOptimize(check(w.jobs[i], w.jobs[i - 1]));
      calls += 2;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(calls));
}
BENCHMARK(BM_QueueCheckByStore)->Unit(benchmark::kMicrosecond);

// The same pairs under a policy without quotas (a standby-only site, bench/scale.py's): the QOS
// rules alone decide. BM_QueueCheckQosAlone: queue_preempts; BM_QueueCheckQosRules: the QOS
// rules only (qos_preemptable, preempt/qos' own check): what stock Slurm's sort pays.
void queue_pairs(benchmark::State& state, bool plugin) {
  World& w = world();
  auto no_quotas = std::make_shared<sp::Policy>(*w.policy);
  no_quotas->quotas.clear();
  sp::QueueOrder order;
  order.set(no_quotas);
  uint64_t calls = 0;
  for (auto _ : state) {
    for (std::size_t i = 1; i < w.jobs.size(); ++i) {
      const job_record_t& a = w.jobs[i - 1];
      const job_record_t& b = w.jobs[i];
      if (plugin) {
        benchmark::DoNotOptimize(sp::queue_preempts(order, a, b));
        benchmark::DoNotOptimize(sp::queue_preempts(order, b, a));
      } else {
        benchmark::DoNotOptimize(sp::qos_preemptable(b, a));
        benchmark::DoNotOptimize(sp::qos_preemptable(a, b));
      }
      calls += 2;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(calls));
}
void BM_QueueCheckQosAlone(benchmark::State& state) { queue_pairs(state, true); }
void BM_QueueCheckQosRules(benchmark::State& state) { queue_pairs(state, false); }
BENCHMARK(BM_QueueCheckQosAlone)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_QueueCheckQosRules)->Unit(benchmark::kMicrosecond);

// Slurm's victim search sorts its candidates (preempt.c _sort_by_prio, list_sort = qsort) asking
// PREEMPT_DATA_PRIO of both jobs at each comparison: QuotaSweeps::rank, under the job write lock.
// 200 running candidates (a partition's standby jobs), half of them with a story of two earlier
// preemptions in AdminComment (after owner traffic), the anti-starvation policy on, as in
// etc/preempt.yaml; argument 0: no story at all (before any preemption). BM_VictimSortRank: the
// plugin's answer; BM_VictimSortQosRank: preempt/qos' (QOS priority, then node count). Items =
// candidate sorts.
void victim_sort(benchmark::State& state, bool plugin) {
  static const std::shared_ptr<const sp::Policy> policy = sp::policy_of(sp::load_policy_text(
      "starvation: {max_preemptions: 3, window: 24h, protect_for: 2h}\n", "bench.yaml"));
  static slurmdb_qos_rec_t standby = [] {
    slurmdb_qos_rec_t q{};
    q.name = const_cast<char*>("standby");
    q.id = 3;
    q.priority = 10;
    return q;
  }();
  static std::string story =
      "slurm-preempt: preempted at 2026-12-06T10:00:00Z by JobId=20001 (qos owner, account own3, "
      "owner reclaim): signal USR1, grace 5 s; slurm-preempt: killed at its grace end "
      "2026-12-06T10:00:05Z, requeued as restart 1; slurm-preempt: preempted at "
      "2026-12-06T11:00:00Z by JobId=20401 (qos owner, account own7, owner reclaim): signal USR1, "
      "grace 5 s; slurm-preempt: killed at its grace end 2026-12-06T11:00:05Z, requeued as "
      "restart 2";
  const bool with_stories = state.range(0) != 0;
  std::vector<job_record_t> jobs(200);
  std::mt19937 start_rng(11);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].job_id = static_cast<uint32_t>(i + 1);
    jobs[i].job_state = JOB_RUNNING;
    jobs[i].qos_ptr = &standby;
    jobs[i].node_cnt = 1;
    jobs[i].start_time =
        static_cast<time_t>(1'796'000'000 - static_cast<int64_t>(start_rng() % 3600));
    if (with_stories && i % 2 == 0) jobs[i].admin_comment = story.data();
  }
  sp::QuotaSweeps sweeps;
  sp::QueueOrder order;
  order.set(policy);
  (void)sweeps.preemptable(policy, jobs[0], jobs[1], kGpuPos, 1);  // the sweep's policy
  const time_t now = 1'796'000'100;
  std::vector<job_record_t*> list;
  for (auto& j : jobs) list.push_back(&j);
  std::mt19937 rng(5);
  for (auto _ : state) {
    state.PauseTiming();
    std::shuffle(list.begin(), list.end(), rng);
    state.ResumeTiming();
    if (plugin) {
      std::sort(list.begin(), list.end(), [&](const job_record_t* a, const job_record_t* b) {
        return sweeps.rank(*a, now) < sweeps.rank(*b, now);
      });
    } else {
      const auto prio = [](const job_record_t* j) {
        return (static_cast<uint32_t>(j->qos_ptr->priority) << 16) + j->node_cnt;
      };
      std::sort(list.begin(), list.end(),
                [&](const job_record_t* a, const job_record_t* b) { return prio(a) < prio(b); });
    }
    benchmark::DoNotOptimize(list.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
void BM_VictimSortRank(benchmark::State& state) { victim_sort(state, true); }
void BM_VictimSortQosRank(benchmark::State& state) { victim_sort(state, false); }
BENCHMARK(BM_VictimSortRank)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_VictimSortQosRank)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
