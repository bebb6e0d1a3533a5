// Translation layer of priority/fairshare: job_record_t -> sp::PriorityInput, the weighted
// terms -> job_record_t::prio_factors (what sprio shows), and slurm.conf's weights.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "policy.hpp"
#include "priority.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/slurmctld/slurmctld.h"
}

namespace sp {

// The job's nice value relative to Slurm's NICE_OFFSET (negative: higher priority).
int64_t nice_of(const job_record_t& job);

// The fair-share factor of the job's association (its fair-share parent's for FairShare=parent)
// as the last usage pass computed it; 0 without an association, 1 for an association no pass
// has seen yet. Caller holds the assoc read lock.
double fairshare_of(const job_record_t& job);

// What the policy gives a QOS (boost, priority class), found by name once per QOS record
// within one hold of assoc_mgr's QOS lock (a record may be freed and another made at its
// address between two holds): a recalculation hold asks it for hundreds of jobs of a few QOS.
class QosTermsMemo {
 public:
  struct Terms {
    uint32_t boost = 0;
    double class_norm = 0;
  };

  Terms of(const slurmdb_qos_rec_t& qos, const Policy& policy);

 private:
  std::vector<std::pair<const slurmdb_qos_rec_t*, Terms>> seen_;
};

// Plain inputs of a job's priority (all but the over-quota factor, which needs the other jobs
// of its project: RecalcContext's ledger). Caller holds the job lock (read at least) and
// assoc_mgr's assoc and QOS read locks.
PriorityInput input_of(const job_record_t& job, const Policy& policy, bool favor_small = false,
                       QosTermsMemo* memo = nullptr);

// Keeps the terms in job.prio_factors (allocated with xmalloc on first use, freed by Slurm
// with the job), in the form sprio reads: weighted values, SITE offset by NICE_OFFSET.
void store_terms(job_record_t& job, const PriorityTerms& terms);
// A job queued in several partitions (part_ptr_list): its priority_array, one priority per
// partition (lib/priority.hpp priority_in_partition), in the order Slurm's scheduler reads it:
// part_ptr_list sorted by PriorityTier, highest first (as priority/multifactor sorts it).
void store_partition_priorities(job_record_t& job, const PriorityTerms& terms, const Weights& w);

// Which PriorityWeight* keys slurm.conf (with the files it includes) has. slurm_conf_t holds
// 0 both for "PriorityWeightAge=0" and for no such line, so the file is read again with
// Slurm's own parser (s_p_parse_file: same Include, case and continuation rules), looking only
// for these keys. nullopt when it cannot be read or parsed.
struct WeightKeys {
  bool age = false, fairshare = false, qos = false, partition = false, job_size = false;
};
std::optional<WeightKeys> weight_keys_in(const char* slurm_conf_path);

// PriorityWeight*, PriorityMaxAge, PriorityDecayHalfLife, PriorityCalcPeriod and
// PriorityFavorSmall from slurm.conf. A PriorityWeight* counts as set where `keys` says the
// file has it (0 included: the factor is off, as with priority/multifactor); without `keys`
// (slurm.conf unreadable) where it is non-zero. The others are 0 where unset or at Slurm's
// default: Slurm gives PriorityMaxAge and PriorityDecayHalfLife 7 days and
// PriorityCalcPeriod 5 minutes when the site says nothing, so those values leave the choice
// to the policy.
SlurmWeights slurm_weights(const slurm_conf_t& conf, const std::optional<WeightKeys>& keys);

// The partitions of the job sprio lists (one line each): its partition, or each of the
// partitions it is queued in, those the request names when it names some.
std::vector<part_record_t*> sprio_partitions(const job_record_t& job,
                                             const priority_factors_request_msg_t& req);
// sprio_partitions of a job sprio's request selects (pending, eligible, not held, matching the
// request's job, user and partition filters; who may see it is checked by the caller), none
// for one it does not: one read of the job's partition list (sprio asks this of every job in
// slurmctld, under the job read lock).
std::vector<part_record_t*> sprio_lines(const job_record_t& job,
                                        const priority_factors_request_msg_t& req, time_t now);

// An interactive allocation (srun or salloc, no batch script) with a checkpoint promise:
// copies the promise's variables (checkpoint_environment) into the job's supplemental
// environment, which slurmctld sends back with the allocation; srun and salloc export it, so
// every step's tasks see it, as a batch job's do. job_submit cannot: it has no job record yet,
// and only a batch job's environment is kept. Once per job (a second call finds the variables);
// no allocation when there is nothing to do. Caller holds the job write lock.
void export_checkpoint_env(job_record_t& job, const Policy& policy);

}  // namespace sp
