#include "priority_adapter.hpp"

#include "checkpoint.hpp"
#include "fairshare.hpp"
#include "slurm_list.hpp"
#include "slurm_env.hpp"
#include "units.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <string>
#include <vector>

extern "C" {
#include "src/common/parse_config.h"
#include "src/common/read_config.h"
#include "src/common/slurm_xlator.h"
#include "src/common/xmalloc.h"
}

// slurm_xlator.h renames calls of Slurm's config parser to their slurm_s_p_* aliases (the only
// names libslurm.so exports; libslurmfull has both), but parse_config.h was included before
// it, through slurmctld.h, and declares the plain names: declare the aliases.
extern "C" {
s_p_hashtbl_t* slurm_s_p_hashtbl_create(const struct conf_file_options options[]);
void slurm_s_p_hashtbl_destroy(s_p_hashtbl_t* hashtbl);
int slurm_s_p_parse_file(s_p_hashtbl_t* hashtbl, uint32_t* hash_val, char* filename,
                         bool ignore_new, char* last_ancestor);
int slurm_s_p_get_uint32(uint32_t* num, const char* key, const s_p_hashtbl_t* hashtbl);
}

// slurmctld's CPU count; weak so that sshare, sprio and the unit tests can load this code.
extern "C" uint32_t cluster_cpus __attribute__((weak));

namespace sp {
namespace {

bool in_list(List list, uint32_t value) {
  if (list == nullptr) return true;  // no filter
  bool found = false;
  for_each_ro<uint32_t>(list, [&](const uint32_t* v) {
    found = *v == value;
    return !found;
  });
  return found;
}

}  // namespace

int64_t nice_of(const job_record_t& job) {
  if (job.details == nullptr) return 0;
  return static_cast<int64_t>(job.details->nice) - NICE_OFFSET;
}

double fairshare_of(const job_record_t& job) {
  const slurmdb_assoc_rec_t* a = job.assoc_ptr;
  if (a == nullptr || a->usage == nullptr) return 0.0;
  // FairShare=parent: the association competes as its fair-share parent.
  if (a->shares_raw == kSharesUseParent && a->usage->fs_assoc_ptr &&
      a->usage->fs_assoc_ptr->usage) {
    a = a->usage->fs_assoc_ptr;
  }
  // Not yet computed by a usage pass (a new association): it has no usage yet.
  if (a->usage->usage_norm == static_cast<long double>(NO_VAL)) return 1.0;
  return a->usage->fs_factor;
}

QosTermsMemo::Terms QosTermsMemo::of(const slurmdb_qos_rec_t& qos, const Policy& policy) {
  for (const auto& [rec, terms] : seen_) {
    if (rec == &qos) return terms;
  }
  Terms t;
  if (qos.name != nullptr) {
    t.boost = boost_for_qos(policy, qos.name);
    t.class_norm = class_norm(policy, qos.name);
  }
  seen_.emplace_back(&qos, t);
  return t;
}

PriorityInput input_of(const job_record_t& job, const Policy& policy, bool favor_small,
                       QosTermsMemo* memo) {
  PriorityInput in;
  in.accrue_time = job.details ? job.details->accrue_time : 0;
  in.fairshare = fairshare_of(job);
  if (job.details && &cluster_cpus != nullptr && cluster_cpus != NO_VAL) {
    in.job_size = job_size_factor(job.details->min_cpus, cluster_cpus, favor_small);
  }
  if (job.qos_ptr) {
    if (job.qos_ptr->usage) in.qos_norm = job.qos_ptr->usage->norm_priority;
    if (memo != nullptr) {
      const QosTermsMemo::Terms t = memo->of(*job.qos_ptr, policy);
      in.boost = t.boost;
      in.class_norm = t.class_norm;
    } else if (job.qos_ptr->name) {
      in.boost = boost_for_qos(policy, job.qos_ptr->name);
      in.class_norm = class_norm(policy, job.qos_ptr->name);
    }
  }
  if (job.part_ptr) in.partition_norm = job.part_ptr->norm_priority;
  in.nice = nice_of(job);
  return in;
}

void store_terms(job_record_t& job, const PriorityTerms& t) {
  if (job.prio_factors == nullptr) {
    job.prio_factors =
        static_cast<priority_factors_object_t*>(xmalloc(sizeof(priority_factors_object_t)));
  }
  priority_factors_object_t& f = *job.prio_factors;
  f.priority_age = t.age;
  f.priority_fs = t.fairshare;
  f.priority_qos = t.qos;
  f.priority_part = t.partition;
  f.priority_js = t.job_size;
  f.priority_assoc = 0;
  f.priority_site = static_cast<uint32_t>(
      std::clamp<double>(t.site + NICE_OFFSET, 0, static_cast<double>(UINT32_MAX)));
  f.nice = static_cast<uint32_t>(t.nice + NICE_OFFSET);
}

namespace {

// A job's partitions, read with for_each_ro: no iterator is allocated (list_iterator_create
// takes an xmalloc and registers with the list), as this runs for every pending job of every
// recalculation pass under the job write lock. Most jobs have few partitions: they stay on the
// stack.
class JobPartitions {
 public:
  explicit JobPartitions(List list) {
    for_each_ro<part_record_t>(list, [this](part_record_t* part) {
      add(part);
      return true;
    });
  }
  std::size_t size() const { return n_; }
  part_record_t* operator[](std::size_t i) const { return data()[i]; }
  // In Slurm's order for priority_array: PriorityTier, highest first (equal tiers in any order).
  bool in_tier_order() const {
    for (std::size_t i = 1; i < size(); ++i) {
      if ((*this)[i - 1]->priority_tier < (*this)[i]->priority_tier) return false;
    }
    return true;
  }

 private:
  static constexpr std::size_t kInline = 8;
  part_record_t* const* data() const { return n_ <= kInline ? inline_.data() : more_.data(); }
  void add(part_record_t* part) {
    if (n_ < kInline) {
      inline_[n_] = part;
    } else {
      if (n_ == kInline) more_.assign(inline_.begin(), inline_.end());
      more_.push_back(part);
    }
    ++n_;
  }
  std::array<part_record_t*, kInline> inline_{};
  std::vector<part_record_t*> more_;
  std::size_t n_ = 0;
};

}  // namespace

void store_partition_priorities(job_record_t& job, const PriorityTerms& terms, const Weights& w) {
  if (job.part_ptr_list == nullptr) return;
  JobPartitions parts(job.part_ptr_list);
  if (parts.size() == 0) return;
  if (!parts.in_tier_order()) {
    // Slurm's priority_sort_part_tier: higher PriorityTier first. Once per job, in practice:
    // the list stays sorted (list_sort frees and allocates every node of it, so it is not
    // done again on every pass, as priority/multifactor does).
    list_sort(job.part_ptr_list, [](void* x, void* y) {
      const auto* a = *static_cast<part_record_t**>(x);
      const auto* b = *static_cast<part_record_t**>(y);
      return a->priority_tier > b->priority_tier ? -1 : a->priority_tier < b->priority_tier ? 1 : 0;
    });
    parts = JobPartitions(job.part_ptr_list);
  }
  if (job.priority_array == nullptr) {
    job.priority_array = static_cast<uint32_t*>(xcalloc(parts.size() + 1, sizeof(uint32_t)));
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    job.priority_array[i] = priority_in_partition(terms, parts[i]->norm_priority, w);
  }
}

std::optional<WeightKeys> weight_keys_in(const char* slurm_conf_path) {
  if (slurm_conf_path == nullptr || *slurm_conf_path == '\0') return std::nullopt;
  // s_p_parse_file waits up to 60 s for a file it cannot stat: never let it.
  struct stat st {};
  if (::stat(slurm_conf_path, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  static constexpr const char* kKeys[] = {"PriorityWeightAge", "PriorityWeightFairshare",
                                          "PriorityWeightQOS", "PriorityWeightPartition",
                                          "PriorityWeightJobSize"};
  s_p_options_t options[std::size(kKeys) + 1] = {};
  for (size_t i = 0; i < std::size(kKeys); ++i) {
    options[i].key = const_cast<char*>(kKeys[i]);  // Slurm's type; never written
    options[i].type = S_P_UINT32;
  }
  s_p_hashtbl_t* table = s_p_hashtbl_create(options);
  uint32_t hash = 0;
  std::string path(slurm_conf_path);
  // ignore_new: every other key of slurm.conf is skipped (logged by Slurm at debug level).
  const int rc = s_p_parse_file(table, &hash, path.data(), true, nullptr);
  std::optional<WeightKeys> keys;
  if (rc == SLURM_SUCCESS) {
    uint32_t v = 0;
    WeightKeys k;
    k.age = s_p_get_uint32(&v, kKeys[0], table) != 0;
    k.fairshare = s_p_get_uint32(&v, kKeys[1], table) != 0;
    k.qos = s_p_get_uint32(&v, kKeys[2], table) != 0;
    k.partition = s_p_get_uint32(&v, kKeys[3], table) != 0;
    k.job_size = s_p_get_uint32(&v, kKeys[4], table) != 0;
    keys = k;
  }
  s_p_hashtbl_destroy(table);
  return keys;
}

SlurmWeights slurm_weights(const slurm_conf_t& c, const std::optional<WeightKeys>& keys) {
  SlurmWeights s;
  auto weight = [&](bool present, uint32_t value) -> std::optional<uint32_t> {
    if (keys ? present : value != 0) return value;
    return std::nullopt;
  };
  const WeightKeys k = keys.value_or(WeightKeys{});
  s.age = weight(k.age, c.priority_weight_age);
  s.fairshare = weight(k.fairshare, c.priority_weight_fs);
  s.qos = weight(k.qos, c.priority_weight_qos);
  s.partition = weight(k.partition, c.priority_weight_part);
  s.job_size = weight(k.job_size, c.priority_weight_js);
  // Always set in Slurm: its defaults count as "not set", so the policy's apply.
  if (c.priority_max_age != DEFAULT_PRIORITY_DECAY) s.max_age_s = c.priority_max_age;
  if (c.priority_decay_hl == 0) {
    s.half_life_s = -1;  // PriorityDecayHalfLife=0: no decay
  } else if (c.priority_decay_hl != DEFAULT_PRIORITY_DECAY && c.priority_decay_hl != NO_VAL) {
    s.half_life_s = c.priority_decay_hl;
  }
  if (c.priority_calc_period != DEFAULT_PRIORITY_CALC_PERIOD) {
    s.calc_period_s = c.priority_calc_period;
  }
  s.favor_small = c.priority_favor_small != 0;
  return s;
}

std::vector<part_record_t*> sprio_partitions(const job_record_t& job,
                                             const priority_factors_request_msg_t& req) {
  std::vector<part_record_t*> out;
  const auto wanted = [&](const part_record_t* part) {
    return part != nullptr && part->name != nullptr &&
           (req.partitions == nullptr || *req.partitions == '\0' ||
            list_contains(req.partitions, part->name));
  };
  if (job.part_ptr_list == nullptr) {
    if (wanted(job.part_ptr)) out.push_back(job.part_ptr);
    return out;
  }
  const JobPartitions parts(job.part_ptr_list);  // no iterator: for_each_ro
  out.reserve(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (wanted(parts[i])) out.push_back(parts[i]);
  }
  return out;
}

std::vector<part_record_t*> sprio_lines(const job_record_t& job,
                                        const priority_factors_request_msg_t& req, time_t now) {
  const job_record_t* j = &job;  // Slurm's IS_JOB_* macros need a plain pointer name
  if (!IS_JOB_PENDING(j) || IS_JOB_REVOKED(j)) return {};
  if (job.details == nullptr || job.details->begin_time == 0 || job.details->begin_time > now) {
    return {};  // not eligible yet
  }
  if (job.priority == 0 || job.prio_factors == nullptr) return {};  // held / not computed
  if (job.part_ptr == nullptr) return {};
  if (!in_list(req.job_id_list, job.job_id) || !in_list(req.uid_list, job.user_id)) return {};
  return sprio_partitions(job, req);
}

void export_checkpoint_env(job_record_t& job, const Policy& policy) {
  if (job.batch_flag != 0 || job.details == nullptr) return;
  const std::string_view control =
      env_value(job.spank_job_env, job.spank_job_env_size, kControlEnvName);
  if (control.empty()) return;
  if (!env_value(job.details->env_sup, job.details->env_cnt, kEnvSignal).empty()) return;
  const auto c = decode_checkpoint(control);
  if (!c) return;
  const auto vars = checkpoint_environment(*c, policy.checkpoint);
  uint32_t count = job.details->env_cnt;  // a uint16_t in job_details
  if (count + vars.size() > UINT16_MAX) return;
  for (const auto& [name, value] : vars) env_set(job.details->env_sup, count, name, value);
  job.details->env_cnt = static_cast<uint16_t>(count);
}

}  // namespace sp
