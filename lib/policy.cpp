#include "policy.hpp"

#include <algorithm>

#include "text.hpp"

namespace sp {

std::vector<QosRule> default_qos() {
  QosRule standby;
  standby.name = "standby";
  standby.preemptible = true;
  standby.boost = 1000;
  QosRule normal;
  normal.name = "normal";
  normal.preempts = {"standby"};
  QosRule owner;
  owner.name = "owner";
  owner.preempts = {"standby"};
  return {standby, normal, owner};
}

std::vector<PriorityClass> default_classes() {
  return {
      {"inference", 125, false},
      {"build", 100, false},
      {"interactive", 75, true},
      {"train", 50, true},
  };
}

void finalize(Policy& p) {
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
    return out;
  };
  for (auto& g : p.owners) g.partition_list = join(g.partitions);
  auto spill = p.public_partitions;
  if (!p.standby_partition.empty()) spill.push_back(p.standby_partition);
  p.spill_partitions = join(spill);
}

Policy default_policy() {
  Policy p;
  p.qos = default_qos();
  p.classes = default_classes();
  finalize(p);
  return p;
}

const QosRule* Policy::find_qos(std::string_view name) const {
  auto it = std::find_if(qos.begin(), qos.end(),
                         [&](const QosRule& q) { return same_name(q.name, name); });
  return it == qos.end() ? nullptr : &*it;
}

std::string Policy::preemptible_qos_hint() const {
  std::string out;
  for (const auto& q : qos) {
    if (q.preemptible) out += (out.empty() ? "--qos=" : " or --qos=") + q.name;
  }
  return out;
}

const OwnerGroup* Policy::find_owner(std::string_view account) const {
  auto it = std::find_if(owners.begin(), owners.end(),
                         [&](const OwnerGroup& o) { return same_name(o.account, account); });
  return it == owners.end() ? nullptr : &*it;
}

}  // namespace sp
