// Google Benchmark over lib/: the costs that sit on slurmctld's hot paths.
//   ./bench/bench_lib                 (after make; scripts/bench runs it with the right flags)
//
// BM_FairshareTree is one usage pass of priority/fairshare over 10k associations (decay,
// accrual of 2k running jobs, shares, effective usage, factors); BM_FullRecalculation adds the
// priorities of 100k pending jobs to it (goal <= 15 ms); BM_PrioritySet is one job's priority
// as priority_p_set computes it (goal <= 200 ns).
//
// BM_DecideStream times each of 100k synthetic submissions through decide() and reports the
// per-call p50 and p99 (ns) and heap allocations per accepted decision. The global operator
// new below counts allocations for the whole program.
//
// BM_MayPreemptStream is preempt/quota's decision (preempt_p_preemptable, called for every job
// of the job list under slurmctld's write locks) over 10k running jobs of 1k projects: p50/p99
// per call and allocations per call (goal <= 100 ns p50, 0 allocations). BM_QuotaSnapshot is
// the once-per-sweep snapshot of those 10k running jobs. BM_OverQuotaKeys is priority/
// fairshare's fair division of idle GPUs per pass (10k pending jobs of 1k projects).
//
// BM_Report is preemptctl report after sacct answered: 100k sacct -D -X rows (75k jobs of
// 500 users in 50 accounts; every third job preempted once, saved or killed, and run again;
// one in twenty paused) parsed by parse_sacct_all and counted by build_report, then the json
// (goal: the whole report over 100k records <= 5 s).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

#include "alloc_count.hpp"
#include "checkpoint.hpp"
#include "decide.hpp"
#include "pause_mark.hpp"
#include "report.hpp"
#include "story.hpp"
#include "fairshare.hpp"
#include "policy_loader.hpp"
#include "priority.hpp"
#include "quota.hpp"
#include "watch.hpp"

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

// root -> 99 accounts (shares 1..5) -> 101 users each (shares 1..3): 10k associations.
std::vector<sp::FsNode> synthetic_tree(std::mt19937& rng) {
  std::vector<sp::FsNode> nodes;
  nodes.reserve(10'000);
  nodes.push_back(sp::FsNode{});
  for (int a = 0; a < 99; ++a) {
    sp::FsNode acct;
    acct.id = static_cast<uint32_t>(nodes.size());
    acct.parent = 0;
    acct.shares_raw = 1 + rng() % 5;
    const auto ai = static_cast<int32_t>(nodes.size());
    nodes.push_back(acct);
    for (int u = 0; u < 101 && nodes.size() < 10'000; ++u) {
      sp::FsNode user;
      user.id = static_cast<uint32_t>(nodes.size());
      user.parent = ai;
      user.user = true;
      user.shares_raw = 1 + rng() % 3;
      nodes.push_back(user);
    }
  }
  sp::FsIssues issues;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].user) sp::add_usage(nodes, static_cast<int32_t>(i), rng() % 1'000'000, issues);
  }
  return nodes;
}

struct PendingJob {
  int32_t assoc;
  const char* qos;
  int64_t accrue_time;
  double partition_norm;
};

std::vector<PendingJob> synthetic_pending(std::mt19937& rng, size_t n, size_t n_assoc) {
  static const char* const kQos[] = {"normal", "standby", "owner", "normal"};
  std::vector<PendingJob> jobs(n);
  for (auto& j : jobs) {
    j.assoc = static_cast<int32_t>(1 + rng() % (n_assoc - 1));
    j.qos = kQos[rng() % std::size(kQos)];
    j.accrue_time = 1'700'000'000 - static_cast<int64_t>(rng() % 864'000);
    j.partition_norm = (rng() % 2) ? 1.0 : 0.5;
  }
  return jobs;
}

// What the plugin does per pass over the tree: decay, accrue running jobs, compute.
void usage_pass(std::vector<sp::FsNode>& nodes, const std::vector<int32_t>& running,
                int64_t period) {
  sp::FsIssues issues;
  sp::decay_usage(nodes, sp::decay_multiplier(period, 7 * 86400));
  for (int32_t a : running) sp::add_usage(nodes, a, 64.0L * period, issues);
  sp::compute_fairshare(nodes, issues);
}

// One pending job's priority, as compute() in the plugin does it.
uint32_t job_priority(const PendingJob& j, const std::vector<sp::FsNode>& nodes,
                      const sp::Policy& policy, const sp::Weights& w, int64_t now) {
  sp::PriorityInput in;
  in.accrue_time = j.accrue_time;
  in.fairshare = nodes[static_cast<size_t>(j.assoc)].fs_factor;
  in.qos_norm = 0.5;
  in.partition_norm = j.partition_norm;
  in.boost = sp::boost_for_qos(policy, j.qos);
  return sp::priority_value(sp::priority_terms(in, w, now));
}

void BM_FairshareTree(benchmark::State& state) {
  std::mt19937 rng(7);
  auto nodes = synthetic_tree(rng);
  std::vector<int32_t> running(2000);
  for (auto& r : running) r = static_cast<int32_t>(1 + rng() % (nodes.size() - 1));
  for (auto _ : state) {
    usage_pass(nodes, running, 300);
    benchmark::DoNotOptimize(nodes.data());
  }
  state.counters["assocs"] = static_cast<double>(nodes.size());
}
BENCHMARK(BM_FairshareTree)->Unit(benchmark::kMillisecond);

void BM_FullRecalculation(benchmark::State& state) {
  const auto policy = example_policy();
  const sp::Weights w = sp::effective_weights(policy->priority, {});
  std::mt19937 rng(11);
  auto nodes = synthetic_tree(rng);
  const auto jobs = synthetic_pending(rng, 100'000, nodes.size());
  std::vector<uint32_t> prio(jobs.size());
  std::vector<int32_t> running(2000);
  for (auto& r : running) r = static_cast<int32_t>(1 + rng() % (nodes.size() - 1));
  int64_t now = 1'700'000'000;
  for (auto _ : state) {
    now += 300;
    usage_pass(nodes, running, 300);
    for (size_t i = 0; i < jobs.size(); ++i)
      prio[i] = job_priority(jobs[i], nodes, *policy, w, now);
    benchmark::DoNotOptimize(prio.data());
  }
  state.counters["jobs"] = static_cast<double>(jobs.size());
  state.counters["assocs"] = static_cast<double>(nodes.size());
}
BENCHMARK(BM_FullRecalculation)->Unit(benchmark::kMillisecond);

void BM_PrioritySet(benchmark::State& state) {
  const auto policy = example_policy();
  const sp::Weights w = sp::effective_weights(policy->priority, {});
  std::mt19937 rng(13);
  auto nodes = synthetic_tree(rng);
  sp::FsIssues issues;
  sp::compute_fairshare(nodes, issues);
  const auto jobs = synthetic_pending(rng, 4096, nodes.size());
  size_t i = 0;
  int64_t now = 1'700'000'000;
  for (auto _ : state) {
    uint32_t p = job_priority(jobs[i++ & 4095], nodes, *policy, w, ++now);
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_PrioritySet);

// 1k projects with quotas, the issue's four classes, 10k running jobs spread over them.
struct QuotaWorld {
  std::shared_ptr<const sp::Policy> policy;
  std::vector<sp::QuotaRunningJob> running;
};

QuotaWorld quota_world() {
  std::string text =
      "classes:\n"
      "  inference:   {priority: 125, preemptible: false}\n"
      "  build:       {priority: 100, preemptible: false}\n"
      "  interactive: {priority: 75,  preemptible: true, grace: 30s}\n"
      "  train:       {priority: 50,  preemptible: true, grace: 60s}\n"
      "quotas:\n";
  for (int i = 0; i < 1000; ++i) text += "  p" + std::to_string(i) + ": {gpus: 8}\n";
  QuotaWorld w;
  w.policy = sp::policy_of(sp::load_policy_text(text, "bench.yaml"));
  std::mt19937 rng(7);
  for (uint32_t id = 1; id <= 10'000; ++id) {
    w.running.push_back({id, static_cast<int>(rng() % 1000), static_cast<int>(rng() % 4),
                         1 + rng() % 8, true, 1'700'000'000 - static_cast<int64_t>(rng() % 86400)});
  }
  return w;
}

void BM_QuotaSnapshot(benchmark::State& state) {
  const QuotaWorld w = quota_world();
  for (auto _ : state) {
    auto jobs = w.running;
    auto s = sp::build_quota_snapshot(*w.policy, jobs);
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * w.running.size()));
}
BENCHMARK(BM_QuotaSnapshot)->Unit(benchmark::kMillisecond);

// priority/fairshare's part of the fair division in each pass: over-quota keys of 10k pending
// jobs of 1k projects after their 10k running jobs, and the ledger priority_p_set reads.
void BM_OverQuotaKeys(benchmark::State& state) {
  const QuotaWorld w = quota_world();
  std::vector<uint64_t> used(w.policy->quotas.size(), 0);
  for (const auto& j : w.running) {
    if (j.project >= 0) used[static_cast<std::size_t>(j.project)] += j.gpus;
  }
  std::vector<sp::PendingQuotaJob> pending;
  for (const auto& j : w.running) pending.push_back({j.job_id + 100'000, j.project, j.gpus, 0});
  sp::OverQuotaLedger ledger;
  for (auto _ : state) {
    auto jobs = pending;
    auto counted = sp::assign_over_quota_keys(*w.policy, used, jobs);
    ledger.reset(w.policy, std::move(counted), jobs);
    benchmark::DoNotOptimize(ledger);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * pending.size()));
}
BENCHMARK(BM_OverQuotaKeys)->Unit(benchmark::kMillisecond);

void BM_MayPreemptStream(benchmark::State& state) {
  const QuotaWorld w = quota_world();
  auto jobs = w.running;
  const sp::QuotaSnapshot snap = sp::build_quota_snapshot(*w.policy, jobs);
  std::vector<sp::VictimView> victims;
  for (const auto& j : w.running) {
    sp::VictimView v;
    v.job_id = j.job_id;
    v.running = true;
    v.project = j.project;
    v.cls = j.cls;
    v.borrowing = snap.is_borrowing(j.job_id);
    victims.push_back(v);
  }
  sp::PreemptorView p;
  p.job_id = 99'999;
  p.project = 3;
  p.cls = 1;  // build: non-preemptible, reclaims within its quota
  p.gpus = 4;
  p.counted = true;
  p.project_used = snap.projects[3].used;
  std::vector<uint64_t> ns(victims.size());
  uint64_t allocs = 0, taken = 0;
  for (auto _ : state) {
    allocs = taken = 0;
    for (std::size_t i = 0; i < victims.size(); ++i) {
      const uint64_t before = g_allocations.load(std::memory_order_relaxed);
      const auto t0 = std::chrono::steady_clock::now();
      const sp::PreemptReason r = sp::may_preempt(victims[i], p, *w.policy);
      const auto t1 = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(r);
      allocs += g_allocations.load(std::memory_order_relaxed) - before;
      taken += r != sp::PreemptReason::None;
      ns[i] = static_cast<uint64_t>(std::chrono::nanoseconds(t1 - t0).count());
    }
  }
  std::sort(ns.begin(), ns.end());
  state.counters["p50_ns"] = static_cast<double>(ns[ns.size() / 2]);
  state.counters["p99_ns"] = static_cast<double>(ns[ns.size() * 99 / 100]);
  state.counters["allocs_per_call"] =
      static_cast<double>(allocs) / static_cast<double>(victims.size());
  state.counters["victims_pct"] =
      100.0 * static_cast<double>(taken) / static_cast<double>(victims.size());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * victims.size()));
}
BENCHMARK(BM_MayPreemptStream)->Unit(benchmark::kMillisecond)->Iterations(5);

// 100k sacct rows as preemptctl report reads them (kReportSacctFormat).
std::string report_rows() {
  constexpr int64_t kT0 = 1'800'000'000;
  const std::string d(1, sp::kSacctDelimiter);
  std::string out;
  std::size_t rows = 0;
  sp::JobCheckpoint c;
  c.signal = 10;
  c.grace_s = 60;
  for (uint32_t job = 1; rows < 100'000; ++job) {
    const int64_t t = kT0 + job * 7;
    const std::string user = "user" + std::to_string(job % 500);
    const std::string account = "acct" + std::to_string(job % 50);
    const std::string tres = "cpu=8,mem=64G,node=1,billing=8,gres/gpu=" + std::to_string(job % 9);
    const auto row = [&](int64_t start, int64_t end, const char* state, const std::string& note) {
      out += std::to_string(job) + d + std::to_string(job) + d + user + d + account + d +
             "standby" + d + "standby" + d + std::to_string(start - 5) + d +
             std::to_string(start - 5) + d + std::to_string(start) + d + std::to_string(end) + d +
             state + d + "0:0" + d + "n" + std::to_string(job % 300) + d + tres + d +
             "slurm-preempt: qos (default)->standby; requeue on;" + note + "\n";
      ++rows;
    };
    std::string note;
    if (job % 20 == 0) note += " slurm-preempt: " + sp::note_paused(user, false, t + 50, 60) + ";";
    if (job % 3 != 0) {
      row(t, t + 3600, "COMPLETED", note);
      continue;
    }
    note += " slurm-preempt: " + sp::note_preempted(t + 1000, job + 1, "owner", "chem", c) + ";";
    note += " slurm-preempt: " +
            (job % 2 == 0 ? sp::note_exited_in_grace(t + 1030, 0, true, 1)
                          : sp::note_killed_at_grace_end(t + 1060, true, 1)) +
            ";";
    row(t, t + 1060, "PREEMPTED", note);
    row(t + 1200, t + 4000, "COMPLETED", note);
  }
  return out;
}

void BM_Report(benchmark::State& state) {
  const std::string text = report_rows();
  std::size_t jobs = 0;
  for (auto _ : state) {
    const auto runs = sp::parse_sacct_all(text);
    const sp::Report r = sp::build_report(runs, 1'900'000'000);
    const std::string json = sp::format_report_json(r, "now-7days", "now");
    benchmark::DoNotOptimize(json.data());
    jobs = r.jobs;
  }
  state.counters["rows"] = 100'000;
  state.counters["jobs"] = static_cast<double>(jobs);
  state.counters["MB"] = static_cast<double>(text.size()) / 1e6;
}
BENCHMARK(BM_Report)->Unit(benchmark::kMillisecond)->Iterations(3);

// The watcher's state file over range(0) records (tombstones of settled preemptions, as a day
// of owner traffic leaves them): what a tick with a visit paid before KeptState (an encode to
// compare with the file) and what a change still pays.
void BM_EncodeWatchState(benchmark::State& state) {
  sp::WatchState s;
  for (int i = 0; i < state.range(0); ++i) {
    s.runs[static_cast<uint32_t>(100'000 + i)] = sp::RunRecord{.start = 1'900'000'000 + i,
                                                               .restart = 1,
                                                               .triggered = true,
                                                               .settled = true,
                                                               .preempt = 1'900'000'100 + i,
                                                               .grace_end = 1'900'000'160 + i};
  }
  for (auto _ : state) {
    const std::string text = sp::encode_watch_state(s);
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["records"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_EncodeWatchState)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
