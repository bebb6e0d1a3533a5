// Priority arithmetic for priority/fairshare. Pure; the plugin adapts job_record_t.
//
// priority = age + fairshare + qos + partition + job_size + site, where each of the first
// five is its weight times a factor in [0, 1], and site = the policy's boost for the job's
// QOS plus its priority class' weight share plus, with quotas, its over-quota share (the
// fair division of idle GPUs between borrowing projects, lib/quota.hpp). sprio shows each
// term as its own column (site in SITE), and their sum is the priority the scheduler uses.
#pragma once

#include <cstdint>
#include <optional>

#include "policy.hpp"

namespace sp {

// The weights actually in force: slurm.conf's PriorityWeight* where the site wrote the key (0
// included: it turns the factor off, as with priority/multifactor), and its PriorityMaxAge
// where set; the policy's otherwise.
struct Weights {
  uint32_t age = 0;
  uint32_t fairshare = 0;
  uint32_t qos = 0;
  uint32_t partition = 0;
  uint32_t job_size = 0;
  uint32_t priority_class = 0;
  uint32_t over_quota = 0;  // the policy's; 0 when it has no quotas
  int64_t max_age_s = 1;
  int64_t half_life_s = 0;      // usage half-life; <= 0: no decay
  int64_t calc_period_s = 300;  // how often usage accrues and pending jobs are recalculated
  bool favor_small = false;     // PriorityFavorSmall: the job-size factor favours small jobs
  bool operator==(const Weights&) const = default;
};

// As slurm.conf has them. PriorityWeight*: nullopt where slurm.conf has no such key, the value
// where it has one (0 included). The rest: 0 = not set; PriorityDecayHalfLife and
// PriorityCalcPeriod always have a value in Slurm: the adapter reports them as 0 (not set)
// when they are Slurm's defaults, and PriorityDecayHalfLife=0 (Slurm's "no decay") as -1.
struct SlurmWeights {
  std::optional<uint32_t> age, fairshare, qos, partition, job_size;
  int64_t max_age_s = 0;
  int64_t half_life_s = 0;
  int64_t calc_period_s = 0;
  bool favor_small = false;
};

Weights effective_weights(const PriorityWeights& policy, const SlurmWeights& slurm);

// Whether the weights plus the largest boost can exceed the 32-bit priority (then priorities
// saturate at UINT32_MAX - 1 and stop ordering the jobs that reach it).
bool weights_may_saturate(const Weights& w, uint32_t max_boost);

// A pending job, as plain values.
struct PriorityInput {
  int64_t accrue_time = 0;    // when the job started accruing age; 0: not accruing
  double qos_norm = 0;        // QOS priority / highest QOS priority, in [0, 1]
  double partition_norm = 0;  // partition PriorityJobFactor / highest, in [0, 1]
  double fairshare = 0;       // in [0, 1]
  double job_size = 0;        // in [0, 1]
  uint32_t boost = 0;         // policy boost of the job's QOS
  double class_norm = 0;      // priority class / highest class priority, in [0, 1]
  double over_quota = 0;      // over_quota_factor() of the job (lib/quota.hpp), in [0, 1]
  int64_t nice = 0;           // relative to Slurm's NICE_OFFSET; positive lowers priority
};

// Weighted terms, each already multiplied by its weight.
struct PriorityTerms {
  double age = 0, fairshare = 0, qos = 0, partition = 0, job_size = 0;
  double site = 0;  // boost + class term + over-quota term
  int64_t nice = 0;
};

// The age term is the weight times the time accrued over max age, rounded up to a whole point:
// any job that has waited outranks a new one with the same factors, whatever PriorityMaxAge is.
PriorityTerms priority_terms(const PriorityInput& in, const Weights& w, int64_t now);

// The sum, minus nice, rounded, clamped to [1, UINT32_MAX - 1] (0 would hold the job).
uint32_t priority_value(const PriorityTerms& t);

// The priority of the same job queued in another partition: the terms with the partition term
// replaced by that partition's (its PriorityJobFactor over the highest, times the weight). A
// job submitted to several partitions gets one per partition (Slurm's priority_array, which
// the scheduler and sprio use partition by partition), as with priority/multifactor.
uint32_t priority_in_partition(PriorityTerms t, double partition_norm, const Weights& w);

// The boost of a job's QOS.
uint32_t boost_for_qos(const Policy& p, std::string_view qos);
// A job's class priority over the highest class priority, in [0, 1]; 0 when its QOS is not a
// class.
double class_norm(const Policy& p, std::string_view qos);

// effective_weights() for a policy: the over-quota weight only where the policy has quotas.
Weights policy_weights(const Policy& p, const SlurmWeights& slurm);

// First-come first-served with nice, the ordering of Slurm's priority/basic: each new job one
// less than the last, shifted by nice, never below 1. priority/fairshare falls back to it
// only while it has no policy (a priority_p_set before init completed).
uint32_t fifo_priority(uint32_t last_prio, int64_t nice);

// Slurm's fair-share factor 2^(-usage/shares/dampening); 0 when shares are zero or unknown
// (or usage is Slurm's NO_VAL); dampening (FairShareDampeningFactor) below 1 counts as 1.
double fairshare_factor(long double usage_efctv, long double shares_norm, double dampening = 1.0);

// The job-size factor: the job's CPUs over the cluster's, in [0, 1]; inverted with favor_small.
double job_size_factor(uint64_t job_cpus, uint64_t cluster_cpus, bool favor_small);

// GrpTRESRunMins, kept as priority/multifactor keeps it. When a job starts, Slurm reserves
// each TRES count x its time limit (x its QOS' UsageFactor) in grp_used_tres_run_secs of its
// QOS, its partition's QOS and its association chain; the priority plugin gives back, at every
// usage pass, what the job ran since the last pass, and at its end what is left. So the limit
// weighs what running jobs may still run, and once a job has run long enough the next one can
// start. (After a slurmctld restart or reconfigure Slurm reserves every running job's whole
// time limit again: the plugin then gives back what each ran up to the last pass.)
struct RunSecsJob {
  int64_t start = 0;         // start time (epoch s)
  int64_t time_limit_s = 0;  // time limit (s)
  double usage_factor = -1;  // its QOS' UsageFactor; < 0: none
};
// Seconds per TRES unit to give back for the job's run over [from, to] (from: its start or
// the last pass, the later): the part before its time limit runs out, times the usage factor
// (truncated, as Slurm does). `ended`: everything of the reservation left after `from`.
uint64_t run_secs_to_release(const RunSecsJob& job, int64_t from, int64_t to, bool ended);

}  // namespace sp
