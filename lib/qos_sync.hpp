// The QOS that slurmdbd must hold for a policy, and the sacctmgr changes that get it there.
// Pure: the preemptctl tool runs sacctmgr and feeds its output in; nothing here runs anything.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policy.hpp"

namespace sp {

// One QOS setting as sacctmgr names it ("MaxWall", "GraceTime", ...), in sacctmgr's value form.
struct QosField {
  std::string name;
  std::string value;
  bool operator==(const QosField&) const = default;
};

struct QosState {
  std::string name;
  std::vector<QosField> fields;
  bool operator==(const QosState&) const = default;
};

// The fields the policy governs, in this order, with their `sacctmgr show qos format=` names.
// A field the policy leaves unset is cleared in slurmdbd (value "-1" / "" as sacctmgr wants).
std::vector<QosState> desired_qos(const Policy& policy);

// The QOS of the priority classes (one per class, same name), for a policy with quotas (none
// otherwise): Priority, PreemptMode requeue (preemptible) or cluster, GraceTime (0 when not
// preemptible), no Preempt list (preempt/quota decides reclaims), no limits. A class named as a
// qos: rule is left to the rule.
std::vector<QosState> desired_class_qos(const Policy& policy);

// Parses `sacctmgr -nP show qos format=<qos_show_format()>` output.
std::vector<QosState> parse_qos_show(std::string_view text);
std::string qos_show_format();

struct QosChange {
  std::string qos;
  bool create = false;                 // sacctmgr add qos <name> first
  std::vector<QosField> set;           // then modify qos <name> set <field>=<value> ...
  std::vector<std::string> described;  // "MaxWall 1-00:00:00 -> 2-00:00:00", for the admin
};

// What to change so that `current` matches `desired`; QOS already right produce no change.
std::vector<QosChange> plan_qos_changes(const std::vector<QosState>& desired,
                                        const std::vector<QosState>& current);

// sacctmgr argv (without "sacctmgr -i") for one change: {"add","qos",name} and/or
// {"modify","qos",name,"set","F=V",...}.
std::vector<std::vector<std::string>> sacctmgr_commands(const QosChange& change);

// A change to a quota's license or account association: one line for the admin, and the
// sacctmgr argv (without "sacctmgr -i") that makes it.
struct AdminChange {
  std::string subject;    // "license quota_chem", "account chem"
  std::string described;  // "count 4 -> 8"
  std::vector<std::string> argv;
};

// Quota licenses: `sacctmgr -nP show resource withclusters format=<resource_show_format()>`.
std::string resource_show_format();
// Adds or resizes one remote license per quota (server kLicenseServer, count = quota gpus,
// allowed on `cluster`). Licenses the policy no longer has are left alone.
std::vector<AdminChange> plan_license_changes(const Policy& policy, std::string_view shown,
                                              std::string_view cluster);

// Quota accounts: `sacctmgr -nP show assoc where cluster=<cluster> format=<assoc_show_format()>`.
std::string assoc_show_format();
// GrpTRES gres/gpu of each quota account's association = the quota's limit (cleared with -1
// when the policy gives none), and every class QOS granted to the account and its users.
// An account in quotas: without an association on `cluster` is an error: `error` gets one line
// naming it and the fix, and no change is returned.
std::vector<AdminChange> plan_account_changes(const Policy& policy, std::string_view shown,
                                              std::string_view cluster, std::string* error);

}  // namespace sp
