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

}  // namespace sp
