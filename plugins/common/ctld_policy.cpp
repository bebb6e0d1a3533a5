#include "ctld_policy.hpp"

#include "policy_loader.hpp"
#include "slurm_locks.hpp"
#include "text.hpp"

extern "C" {
#include "config.h"

#include "src/common/assoc_mgr.h"
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
  return policy_of(result);
}

bool reload_policy(LogSink& log, PolicyStore& store, time_t stamp) {
  const std::string when = "policy in force after reconfigure (" + std::to_string(stamp) + "): ";
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
  bool found = false;
  ListIterator it = list_iterator_create(assoc_mgr_assoc_list);
  while (auto* a = static_cast<slurmdb_assoc_rec_t*>(list_next(it))) {
    if (a->acct && same_name(account, a->acct)) {  // as assoc_mgr compares them
      found = true;
      break;
    }
  }
  list_iterator_destroy(it);
  return found;
}

bool qos_known(const std::string& name) {
  if (assoc_mgr_qos_list == nullptr) return true;
  slurmdb_qos_rec_t want{};
  want.name = const_cast<char*>(name.c_str());
  return assoc_mgr_fill_in_qos(acct_db_conn, &want, ACCOUNTING_ENFORCE_QOS, nullptr, true) ==
         SLURM_SUCCESS;
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
  const AssocLock locks(assoc_qos_read());
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
      problem = at + where + ".qos " + g.qos + " is not a QOS slurmdbd knows";
    }
  }
  return problem;
}

}  // namespace sp
