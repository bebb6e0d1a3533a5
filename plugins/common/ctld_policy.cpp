#include "ctld_policy.hpp"

#include <algorithm>
#include <vector>

#include "policy_loader.hpp"
#include "slurm_list.hpp"
#include "slurm_locks.hpp"
#include "text.hpp"

extern "C" {
#include "config.h"

#include "src/common/assoc_mgr.h"
#include "src/common/bitstring.h"
#include "src/common/list.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/slurmctld/slurmctld.h"
}

// slurmctld's; weak so that the priority plugin, which links this file, loads in sshare/sprio.
extern "C" void* acct_db_conn __attribute__((weak));

namespace sp {

std::string ctld_policy_path() {
  char* p = get_extra_conf_path(const_cast<char*>("preempt.yaml"));
  std::string path = p ? p : "preempt.yaml";
  xfree(p);
  return path;
}

std::shared_ptr<const Policy> load_ctld_policy(LogSink& log, const char* context) {
  auto result = load_policy_file(ctld_policy_path());
  if (const auto* err = error_of(result)) {
    log.log_error("cannot load policy: " + err->str() + "; " + context);
    return nullptr;
  }
  auto policy = policy_of(result);
  // A story slurmdbd would not keep is refused here, at start and at every reconfigure.
  const bool comment_stored = (slurm_conf.conf_flags & CTL_CONF_SJC) != 0;
  if (const std::string problem = story_field_problem(policy->story.field, comment_stored);
      !problem.empty()) {
    log.log_error("cannot load policy: " + policy->source + ": " + problem + "; " + context);
    return nullptr;
  }
  bus::remember_policy(*policy);
  return policy;
}

StartingPolicy starting_policy(LogSink& log) {
  if (std::shared_ptr<const Policy> held = bus::last_policy()) return {std::move(held), 0};
  return {load_ctld_policy(log, "refusing to start"), slurm_conf.last_update};
}

bool reload_policy(LogSink& log, PolicyStore& store, time_t stamp, const char* occasion) {
  const std::string when =
      std::string("policy in force ") + occasion + " (" + std::to_string(stamp) + "): ";
  auto fresh = load_ctld_policy(log, "keeping the last good policy");
  const auto old = store.get();
  if (!fresh) {
    log.log_info(when + (old ? old->source : std::string("none")) + ", the last good one");
    return false;
  }
  const bool changed = !old || !(*fresh == *old);
  if (changed) store.set(fresh);
  log.log_info(when + fresh->source + (changed ? ", reloaded" : ", unchanged"));
  return changed;
}

namespace {

bool account_known(const std::string& account) {
  if (assoc_mgr_assoc_list == nullptr) return true;  // no accounting: nothing to check against
  bool known = false;
  for_each_ro<slurmdb_assoc_rec_t>(assoc_mgr_assoc_list, [&](const slurmdb_assoc_rec_t* a) {
    known = a->acct && same_name(account, a->acct);  // as assoc_mgr compares them
    return !known;
  });
  return known;
}

bool qos_known(const std::string& name) {
  if (assoc_mgr_qos_list == nullptr) return true;
  slurmdb_qos_rec_t want{};
  want.name = const_cast<char*>(name.c_str());
  return assoc_mgr_fill_in_qos(acct_db_conn, &want, ACCOUNTING_ENFORCE_QOS, nullptr, true) ==
         SLURM_SUCCESS;
}

}  // namespace

int gpu_tres_position_locked() {
  slurmdb_tres_rec_t rec = {};
  rec.type = const_cast<char*>("gres");
  rec.name = const_cast<char*>("gpu");
  const int pos = assoc_mgr_find_tres_pos(&rec, true);
  return pos < 0 ? -1 : pos;
}

namespace {

// GPUs of the nodes in `partitions` (every node when empty), from the nodes' configured TRES;
// 0 when the cluster does not track gres/gpu. Call with assoc_mgr's TRES read lock held.
uint64_t configured_gpus(const std::vector<std::string>& partitions) {
  const int pos = gpu_tres_position_locked();
  if (pos < 0) return 0;
  std::vector<const part_record_t*> parts;
  for (const auto& name : partitions) {
    if (const part_record_t* part = find_part_record(const_cast<char*>(name.c_str()))) {
      parts.push_back(part);
    }
  }
  uint64_t total = 0;
  node_record_t* node = nullptr;
  for (int i = 0; (node = next_node(&i)); ++i) {
    if (node->tres_cnt == nullptr) continue;
    const bool counted =
        partitions.empty() ||
        std::any_of(parts.begin(), parts.end(), [&](const part_record_t* part) {
          return part->node_bitmap != nullptr && bit_test(part->node_bitmap, node->index);
        });
    if (counted) total += node->tres_cnt[pos];
  }
  return total;
}

// Projects that slurmdbd does not know, pools that slurm.conf does not define, a quota above
// the GPUs it is counted on. Call with assoc_mgr's association, QOS and TRES read locks held.
// (Class QOS are not checked: preemptctl qos-sync creates them and needs slurmctld running.)
std::string quota_problem(const Policy& p) {
  const std::string at = p.source + ": ";
  for (const auto& q : p.quotas) {
    const std::string where = "quotas." + q.account;
    if (!account_known(q.account)) {
      return at + where + " names account " + q.account +
             ", which slurmdbd does not know; add it (sacctmgr add account " + q.account +
             ") or remove the quota";
    }
    for (const auto& part : q.partitions) {
      if (!find_part_record(const_cast<char*>(part.c_str()))) {
        return at + where + ".partitions names partition " + part +
               ", which slurm.conf does not define";
      }
    }
  }
  for (const auto& q : p.quotas) {
    const uint64_t gpus = configured_gpus(q.partitions);
    if (gpus != 0 && static_cast<uint64_t>(q.gpus) > gpus) {
      std::string pool = "the cluster has";
      if (!q.partitions.empty()) {
        pool = "partitions";
        for (const auto& part : q.partitions) pool += " " + part;
        pool += " have";
      }
      return at + "quotas." + q.account + " guarantees " + std::to_string(q.gpus) + " GPUs but " +
             pool + " only " + std::to_string(gpus) + "; lower gpus";
    }
  }
  return {};
}

}  // namespace

std::string slurm_config_problem(const Policy& p) {
  const std::string at = p.source + ": ";
  auto partition_problem = [&](const std::string& where, const std::string& part) {
    return find_part_record(const_cast<char*>(part.c_str()))
               ? std::string()
               : at + where + " names partition " + part + ", which slurm.conf does not define";
  };
  for (const auto& part : p.public_partitions) {
    if (auto e = partition_problem("partitions.public", part); !e.empty()) return e;
  }
  if (!p.standby_partition.empty()) {
    if (auto e = partition_problem("partitions.standby", p.standby_partition); !e.empty()) {
      return e;
    }
  }
  assoc_mgr_lock_t read = assoc_qos_read();
  read.tres = READ_LOCK;
  const AssocLock locks(read);
  std::string problem;
  for (const auto& g : p.owners) {
    const std::string where = "owners." + g.account;
    for (const auto& part : g.partitions) {
      if (problem.empty()) problem = partition_problem(where, part);
    }
    for (const auto& node : g.node_names) {
      if (problem.empty() && !find_node_record(const_cast<char*>(node.c_str()))) {
        problem = at + where + " names node " + node + ", which slurm.conf does not define";
      }
    }
    if (problem.empty() && !account_known(g.account)) {
      problem = at + where + " names account " + g.account + ", which slurmdbd does not know";
    }
    if (problem.empty() && !qos_known(g.qos)) {
      problem = at + where + ".qos names QOS " + g.qos + ", which slurmdbd does not know";
    }
  }
  if (problem.empty()) problem = quota_problem(p);
  return problem;
}

}  // namespace sp
