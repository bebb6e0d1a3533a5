#include "policy.hpp"

#include <algorithm>
#include <cctype>

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
      {"interactive", 75, true, 30, 0},
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
  p.class_rules.clear();
  for (const auto& c : p.classes) {
    if (!c.preemptible) continue;
    QosRule r;
    r.name = c.name;
    r.preemptible = true;
    r.grace_s = c.grace_s;
    r.min_runtime_s = c.min_runtime_s;
    p.class_rules.push_back(std::move(r));
  }
  p.quota_lookup.clear();
  for (std::size_t i = 0; i < p.quotas.size(); ++i) {
    Quota& q = p.quotas[i];
    std::string lower;
    for (char c : q.account)
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    q.license = "quota_" + lower;
    p.quota_lookup.emplace_back(std::move(lower), static_cast<int>(i));
  }
  std::sort(p.quota_lookup.begin(), p.quota_lookup.end());
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

const PriorityClass* Policy::find_class(std::string_view name) const {
  const int i = class_index(name);
  return i < 0 ? nullptr : &classes[static_cast<std::size_t>(i)];
}

const QosRule* Policy::find_class_rule(std::string_view name) const {
  auto it = std::find_if(class_rules.begin(), class_rules.end(),
                         [&](const QosRule& q) { return same_name(q.name, name); });
  return it == class_rules.end() ? nullptr : &*it;
}

const Quota* Policy::find_quota(std::string_view account) const {
  const int i = quota_index(account);
  return i < 0 ? nullptr : &quotas[static_cast<std::size_t>(i)];
}

int Policy::class_index(std::string_view name) const {
  for (std::size_t i = 0; i < classes.size(); ++i) {
    if (same_name(classes[i].name, name)) return static_cast<int>(i);
  }
  return -1;
}

int Policy::quota_index(std::string_view account) const {
  if (!quotas.empty() && quota_lookup.size() == quotas.size()) {  // finalized: binary search
    auto lower_less = [](std::string_view a, std::string_view b) {
      return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                          [](char x, char y) {
                                            return std::tolower(static_cast<unsigned char>(x)) <
                                                   std::tolower(static_cast<unsigned char>(y));
                                          });
    };
    auto it = std::lower_bound(quota_lookup.begin(), quota_lookup.end(), account,
                               [&](const std::pair<std::string, int>& e, std::string_view k) {
                                 return lower_less(e.first, k);
                               });
    if (it != quota_lookup.end() && !lower_less(account, it->first)) return it->second;
    return -1;
  }
  for (std::size_t i = 0; i < quotas.size(); ++i) {
    if (same_name(quotas[i].account, account)) return static_cast<int>(i);
  }
  return -1;
}

bool Quota::counts_partition(std::string_view partition) const {
  if (partitions.empty()) return true;
  return std::any_of(partitions.begin(), partitions.end(),
                     [&](const std::string& p) { return p == partition; });
}

}  // namespace sp
