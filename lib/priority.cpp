#include "priority.hpp"

#include <algorithm>
#include <cmath>

namespace sp {
namespace {

double clamp01(double v) {
  if (!(v > 0.0)) return 0.0;  // also NaN
  return v > 1.0 ? 1.0 : v;
}

uint32_t pick(std::optional<uint32_t> slurm, uint32_t policy) { return slurm.value_or(policy); }

}  // namespace

Weights effective_weights(const PriorityWeights& p, const SlurmWeights& s) {
  Weights w;
  w.age = pick(s.age, p.age);
  w.fairshare = pick(s.fairshare, p.fairshare);
  w.qos = pick(s.qos, p.qos);
  w.partition = pick(s.partition, p.partition);
  w.job_size = pick(s.job_size, p.job_size);
  w.priority_class = p.priority_class;
  w.over_quota = p.over_quota;
  w.max_age_s = std::max<int64_t>(1, s.max_age_s > 0 ? s.max_age_s : p.max_age_s);
  w.half_life_s = s.half_life_s != 0 ? std::max<int64_t>(0, s.half_life_s) : p.half_life_s;
  w.calc_period_s = std::max<int64_t>(1, s.calc_period_s > 0 ? s.calc_period_s : p.calc_period_s);
  w.favor_small = s.favor_small;
  return w;
}

bool weights_may_saturate(const Weights& w, uint32_t max_boost) {
  const uint64_t sum = uint64_t{w.age} + w.fairshare + w.qos + w.partition + w.job_size +
                       w.priority_class + w.over_quota + max_boost;
  return sum >= UINT32_MAX - 1;
}

PriorityTerms priority_terms(const PriorityInput& in, const Weights& w, int64_t now) {
  PriorityTerms t;
  if (in.accrue_time > 0 && now > in.accrue_time) {
    // Rounded up, in integers: with a large PriorityMaxAge a job's first hours would otherwise
    // round to 0 and a job that has waited would tie with a new one of the same factors.
    const auto age = static_cast<unsigned __int128>(std::min(now - in.accrue_time, w.max_age_s));
    const auto max_age = static_cast<unsigned __int128>(w.max_age_s);
    const unsigned __int128 points = (age * w.age + max_age - 1) / max_age;
    t.age = static_cast<double>(points);
  }
  t.fairshare = w.fairshare * clamp01(in.fairshare);
  t.qos = w.qos * clamp01(in.qos_norm);
  t.partition = w.partition * clamp01(in.partition_norm);
  t.job_size = w.job_size * clamp01(in.job_size);
  t.site = static_cast<double>(in.boost) + w.priority_class * clamp01(in.class_norm) +
           w.over_quota * clamp01(in.over_quota);
  t.nice = in.nice;
  return t;
}

uint32_t priority_value(const PriorityTerms& t) {
  const double sum =
      t.age + t.fairshare + t.qos + t.partition + t.job_size + t.site - static_cast<double>(t.nice);
  if (!(sum >= 1.0)) return 1;  // also NaN
  if (sum >= static_cast<double>(UINT32_MAX - 1)) return UINT32_MAX - 1;
  return static_cast<uint32_t>(std::lround(sum));
}

uint32_t priority_in_partition(PriorityTerms t, double partition_norm, const Weights& w) {
  t.partition = w.partition * clamp01(partition_norm);
  return priority_value(t);
}

uint32_t boost_for_qos(const Policy& p, std::string_view qos) {
  const QosRule* q = p.find_qos(qos);
  return q ? q->boost : 0;
}

double class_norm(const Policy& p, std::string_view qos) {
  const PriorityClass* c = p.find_class(qos);
  if (c == nullptr) return 0.0;
  uint32_t top = 0;
  for (const auto& k : p.classes) top = std::max(top, k.priority);
  return top == 0 ? 0.0 : static_cast<double>(c->priority) / static_cast<double>(top);
}

Weights policy_weights(const Policy& p, const SlurmWeights& slurm) {
  Weights w = effective_weights(p.priority, slurm);
  if (p.quotas.empty()) w.over_quota = 0;
  return w;
}

uint32_t fifo_priority(uint32_t last_prio, int64_t nice) {
  int64_t prio = last_prio >= 2 ? static_cast<int64_t>(last_prio) - 1 : 1;
  if (nice <= 0 || prio > nice + 1) prio -= nice;
  if (prio < 1) prio = 1;
  if (prio > UINT32_MAX - 1) prio = UINT32_MAX - 1;
  return static_cast<uint32_t>(prio);
}

double fairshare_factor(long double usage_efctv, long double shares_norm, double dampening) {
  constexpr long double kNoVal = 0xfffffffe;  // Slurm's NO_VAL: usage never computed
  if (!(shares_norm > 0.0L) || !std::isfinite(static_cast<double>(shares_norm)) ||
      !std::isfinite(static_cast<double>(usage_efctv)) || usage_efctv == kNoVal) {
    return 0.0;
  }
  const double damp = dampening > 1.0 ? dampening : 1.0;
  const double f = std::exp2(-static_cast<double>(usage_efctv / shares_norm) / damp);
  return f > 1.0 ? 1.0 : f;  // negative usage cannot lift a job above the full factor
}

uint64_t run_secs_to_release(const RunSecsJob& job, int64_t from, int64_t to, bool ended) {
  const int64_t limit_end = job.start + std::max<int64_t>(0, job.time_limit_s);
  from = std::max(from, job.start);
  if (from >= limit_end) return 0;  // already all given back (or the job runs over time)
  const int64_t secs = ended ? limit_end - from : std::min(to, limit_end) - from;
  if (secs <= 0) return 0;
  if (!(job.usage_factor >= 0)) return static_cast<uint64_t>(secs);
  return static_cast<uint64_t>(static_cast<double>(secs) * job.usage_factor);
}

double job_size_factor(uint64_t job_cpus, uint64_t cluster_cpus, bool favor_small) {
  if (cluster_cpus == 0) return 0.0;
  const double f = std::min(1.0, static_cast<double>(job_cpus) / static_cast<double>(cluster_cpus));
  return favor_small ? 1.0 - f : f;
}

}  // namespace sp
