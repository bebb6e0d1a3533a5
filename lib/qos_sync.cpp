#include "qos_sync.hpp"

#include <algorithm>
#include <map>

#include "text.hpp"
#include "units.hpp"

namespace sp {
namespace {

// Field names as `sacctmgr show qos format=` prints and `modify qos set` accepts them.
struct FieldSpec {
  const char* show;  // column in `show qos format=...`
  const char* set;   // key in `modify qos ... set KEY=VALUE`
  enum Kind { List, Word, Duration, Count, Tres } kind;
};
constexpr FieldSpec kFields[] = {
    {"Preempt", "Preempt", FieldSpec::List},
    {"PreemptMode", "PreemptMode", FieldSpec::Word},
    {"GraceTime", "GraceTime", FieldSpec::Duration},
    {"PreemptExemptTime", "PreemptExemptTime", FieldSpec::Duration},
    {"MaxWall", "MaxWall", FieldSpec::Duration},
    {"MaxJobsPU", "MaxJobsPerUser", FieldSpec::Count},
    {"MaxTRESPU", "MaxTRESPerUser", FieldSpec::Tres},
    {"Priority", "Priority", FieldSpec::Count},  // class QOS only; last, so older output parses
};
// Columns before Priority: `show qos` output without it still parses.
constexpr std::size_t kBaseFields = std::size(kFields) - 1;

const FieldSpec& spec(std::string_view show) {
  for (const auto& f : kFields) {
    if (show == f.show) return f;
  }
  return kFields[0];  // unreachable for the names this file uses
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  while (!s.empty()) {
    auto i = s.find(sep);
    if (i != 0) out.emplace_back(s.substr(0, i));
    if (i == std::string_view::npos) break;
    s.remove_prefix(i + 1);
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// Canonical form, so that "00:01:00" and "60" or "b,a" and "a,b" compare equal.
std::string canonical(const FieldSpec& f, std::string_view v) {
  switch (f.kind) {
    case FieldSpec::List:
    case FieldSpec::Tres: {
      auto items = split(v, ',');
      std::sort(items.begin(), items.end());
      return join(items);
    }
    case FieldSpec::Duration: {
      if (v.empty()) return "";
      auto s = parse_duration(v);
      if (!s) return std::string(v);
      return f.show == std::string_view("GraceTime") || *s > 0 ? std::to_string(*s) : "";
    }
    case FieldSpec::Word: {
      std::string w(v);
      std::transform(w.begin(), w.end(), w.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return w;
    }
    case FieldSpec::Count: break;
  }
  return std::string(v);
}

// How a canonical value reads to an admin.
std::string shown(const FieldSpec& f, const std::string& v) {
  if (v.empty()) return "(unset)";
  if (f.kind == FieldSpec::Duration) return format_duration(std::stoll(v));
  return v;
}

std::string tres_limits(const Limits& l) {
  std::vector<std::string> t;
  if (l.max_cpus_per_user) t.push_back("cpu=" + std::to_string(*l.max_cpus_per_user));
  if (l.max_gpus_per_user) t.push_back("gres/gpu=" + std::to_string(*l.max_gpus_per_user));
  return join(t);
}

std::string opt_seconds(const std::optional<int64_t>& v) {
  return v && *v > 0 ? std::to_string(*v) : "";
}

// The value `modify qos set KEY=` needs to go from `from` to `to` (canonical forms).
std::string set_value(const FieldSpec& f, const std::string& from, const std::string& to) {
  switch (f.kind) {
    case FieldSpec::List:
    case FieldSpec::Word: return to;
    case FieldSpec::Count: return to.empty() ? "-1" : to;
    case FieldSpec::Duration:
      // GraceTime takes plain seconds (sacctmgr rejects "00:01:00" there); the others a time.
      if (f.show == std::string_view("GraceTime")) return to.empty() ? "0" : to;
      return to.empty() ? "-1" : format_duration(std::stoll(to));
    case FieldSpec::Tres: {
      // Keys set now but absent from the target are cleared with -1.
      std::map<std::string, std::string> want;
      for (const auto& kv : split(to, ',')) {
        auto eq = kv.find('=');
        want[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
      }
      for (const auto& kv : split(from, ',')) want.try_emplace(kv.substr(0, kv.find('=')), "-1");
      std::vector<std::string> out;
      out.reserve(want.size());
      for (const auto& [k, v] : want) out.push_back(k + "=" + v);
      return join(out);
    }
  }
  return to;
}

}  // namespace

std::string qos_show_format() {
  std::string f = "Name";
  for (const auto& s : kFields) f += std::string(",") + s.show;
  return f;
}

std::vector<QosState> desired_qos(const Policy& p) {
  std::vector<QosState> out;
  for (const auto& q : p.qos) {
    QosState s;
    s.name = q.name;
    auto preempts = q.preempts;
    for (auto& name : preempts) {  // sacctmgr stores and shows QOS names in lower case
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) {
        return static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
      });
    }
    std::sort(preempts.begin(), preempts.end());
    const char* mode = !q.preemptible                    ? "cluster"
                       : q.requeue == RequeueMode::Never ? "cancel"
                                                         : "requeue";
    s.fields = {
        {"Preempt", join(preempts)},
        {"PreemptMode", mode},
        {"GraceTime", q.preemptible ? std::to_string(p.grace_for(q)) : "0"},
        {"PreemptExemptTime", q.preemptible ? opt_seconds(q.min_runtime_s) : ""},
        {"MaxWall", opt_seconds(q.limits.max_walltime_s)},
        {"MaxJobsPU", q.limits.max_running_jobs_per_user
                          ? std::to_string(*q.limits.max_running_jobs_per_user)
                          : ""},
        {"MaxTRESPU", canonical(spec("MaxTRESPU"), tres_limits(q.limits))},
    };
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<QosState> desired_class_qos(const Policy& p) {
  std::vector<QosState> out;
  if (p.quotas.empty()) return out;
  for (const auto& c : p.classes) {
    if (p.find_qos(c.name)) continue;
    QosState s;
    s.name = c.name;
    // Only what a class means: a QOS of that name that already exists keeps its own limits
    // and Preempt list (preempt/quota decides quota reclaim itself).
    s.fields = {
        {"PreemptMode", c.preemptible ? "requeue" : "cluster"},
        {"GraceTime", c.preemptible ? std::to_string(p.grace_for(c)) : "0"},
        {"Priority", std::to_string(c.priority)},
    };
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<QosState> parse_qos_show(std::string_view text) {
  std::vector<QosState> out;
  for (const auto& line : split(text, '\n')) {
    std::vector<std::string> cols;
    std::string_view rest = line;
    while (true) {  // keep empty columns: split() would drop them
      auto bar = rest.find('|');
      cols.emplace_back(rest.substr(0, bar));
      if (bar == std::string_view::npos) break;
      rest.remove_prefix(bar + 1);
    }
    if (cols.size() < 1 + kBaseFields || cols[0].empty()) continue;
    QosState s;
    s.name = cols[0];
    s.fields.reserve(std::size(kFields));
    for (std::size_t i = 0; i < std::size(kFields) && i + 1 < cols.size(); ++i) {
      s.fields.push_back({kFields[i].show, canonical(kFields[i], cols[i + 1])});
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<QosChange> plan_qos_changes(const std::vector<QosState>& desired,
                                        const std::vector<QosState>& current) {
  std::vector<QosChange> changes;
  for (const auto& want : desired) {
    auto it = std::find_if(current.begin(), current.end(),
                           [&](const QosState& c) { return same_name(c.name, want.name); });
    QosChange ch;
    ch.qos = want.name;
    ch.create = it == current.end();
    if (ch.create) ch.described.push_back("created");
    for (const auto& f : want.fields) {
      const FieldSpec& fs = spec(f.name);
      std::string have =
          (fs.kind == FieldSpec::Duration && fs.show == std::string_view("GraceTime")) ||
                  fs.show == std::string_view("Priority")
              ? "0"
              : (fs.kind == FieldSpec::Word ? "cluster" : "");
      if (!ch.create) {
        for (const auto& c : it->fields) {
          if (c.name == f.name) have = c.value;
        }
      }
      if (have == f.value) continue;
      ch.set.push_back({fs.set, set_value(fs, have, f.value)});
      ch.described.push_back(f.name + " " + shown(fs, have) + " -> " + shown(fs, f.value));
    }
    if (ch.create || !ch.set.empty()) changes.push_back(std::move(ch));
  }
  return changes;
}

std::vector<std::vector<std::string>> sacctmgr_commands(const QosChange& c) {
  std::vector<std::vector<std::string>> cmds;
  if (c.create) cmds.push_back({"add", "qos", c.qos});
  if (!c.set.empty()) {
    std::vector<std::string> m = {"modify", "qos", c.qos, "set"};
    for (const auto& f : c.set) m.push_back(f.name + "=" + f.value);
    cmds.push_back(std::move(m));
  }
  return cmds;
}

}  // namespace sp

namespace sp {
namespace {

// `-nP` output split into lines of columns, empty columns kept.
std::vector<std::vector<std::string>> rows(std::string_view text) {
  std::vector<std::vector<std::string>> out;
  for (const auto& line : split(text, '\n')) {
    std::vector<std::string> cols;
    std::string_view rest = line;
    while (true) {
      auto bar = rest.find('|');
      cols.emplace_back(rest.substr(0, bar));
      if (bar == std::string_view::npos) break;
      rest.remove_prefix(bar + 1);
    }
    out.push_back(std::move(cols));
  }
  return out;
}

std::string gpu_tres(std::string_view tres) {
  for (const auto& kv : split(tres, ',')) {
    if (kv.rfind("gres/gpu=", 0) == 0) return kv.substr(9);
  }
  return "";
}

}  // namespace

std::string resource_show_format() { return "Name,Server,Count,Cluster,Allowed"; }

std::vector<AdminChange> plan_license_changes(const Policy& p, std::string_view shown,
                                              std::string_view cluster) {
  const auto table = rows(shown);
  std::vector<AdminChange> out;
  for (const auto& q : p.quotas) {
    const std::string count = std::to_string(q.gpus);
    const std::string subject = "license " + q.license + "@" + std::string(kLicenseServer);
    const std::vector<std::string>* any = nullptr;
    const std::vector<std::string>* here = nullptr;
    for (const auto& r : table) {
      if (r.size() < 5 || !same_name(r[0], q.license) || r[1] != kLicenseServer) continue;
      any = &r;
      if (r[3] == cluster) here = &r;
    }
    if (!any || !here) {
      // A resource not yet allowed on this cluster is added to it the same way.
      out.push_back({subject,
                     any ? "allowed on " + std::string(cluster) : "created, count " + count,
                     {"add", "resource", "name=" + q.license,
                      "server=" + std::string(kLicenseServer), "count=" + count, "type=license",
                      "cluster=" + std::string(cluster), "percentallowed=100"}});
      if (!any) continue;
    }
    if ((*any)[2] != count) {
      out.push_back({subject,
                     "count " + (*any)[2] + " -> " + count,
                     {"modify", "resource", "where", "name=" + q.license,
                      "server=" + std::string(kLicenseServer), "set", "count=" + count}});
    }
    if (here && (*here)[4] != "100") {
      out.push_back({subject,
                     "allowed on " + std::string(cluster) + " " + (*here)[4] + "% -> 100%",
                     {"modify", "resource", "where", "name=" + q.license,
                      "server=" + std::string(kLicenseServer), "cluster=" + std::string(cluster),
                      "set", "percentallowed=100"}});
    }
  }
  return out;
}

std::string assoc_show_format() { return "Account,User,GrpTRES,QOS"; }

std::vector<AdminChange> plan_account_changes(const Policy& p, std::string_view shown,
                                              std::string_view cluster, std::string* error) {
  const auto table = rows(shown);
  std::vector<std::string> class_qos;
  for (const auto& c : p.classes) {
    std::string n = c.name;
    std::transform(n.begin(), n.end(), n.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    class_qos.push_back(std::move(n));
  }
  const std::string where_cluster = "cluster=" + std::string(cluster);
  std::vector<AdminChange> out;
  for (const auto& q : p.quotas) {
    const std::vector<std::string>* account = nullptr;
    std::vector<std::string> users_missing;  // class QOS some user association lacks
    for (const auto& r : table) {
      if (r.size() < 4 || !same_name(r[0], q.account)) continue;
      if (r[1].empty()) account = &r;
      for (const auto& c : class_qos) {
        const auto have = split(r[3], ',');
        if (std::find(have.begin(), have.end(), c) != have.end()) continue;
        if (!r[1].empty() &&
            std::find(users_missing.begin(), users_missing.end(), c) == users_missing.end()) {
          users_missing.push_back(c);
        }
      }
    }
    if (!account) {
      if (error) {
        *error = "account " + q.account + " (quotas:) is not in slurmdbd on cluster " +
                 std::string(cluster) + "; add it with: sacctmgr add account " + q.account +
                 " cluster=" + std::string(cluster);
      }
      return {};
    }
    const std::string subject = "account " + q.account;
    // A limit the policy does not give is left as the admin set it.
    const std::string want = q.limit >= 0 ? std::to_string(q.limit) : "";
    const std::string have = gpu_tres((*account)[2]);
    if (q.limit >= 0 && want != have) {
      out.push_back({subject,
                     "GrpTRES gres/gpu " + (have.empty() ? "(unset)" : have) + " -> " +
                         (want.empty() ? "(unset)" : want),
                     {"modify", "account", "where", "name=" + q.account, where_cluster, "set",
                      "GrpTRES=gres/gpu=" + (want.empty() ? "-1" : want)}});
    }
    std::vector<std::string> missing;
    const auto have_qos = split((*account)[3], ',');
    for (const auto& c : class_qos) {
      if (std::find(have_qos.begin(), have_qos.end(), c) == have_qos.end()) missing.push_back(c);
    }
    if (!missing.empty()) {
      out.push_back({subject,
                     "QOS +" + join(missing),
                     {"modify", "account", "where", "name=" + q.account, where_cluster, "set",
                      "qos+=" + join(missing)}});
    }
    if (!users_missing.empty()) {
      out.push_back({subject,
                     "users' QOS +" + join(users_missing),
                     {"modify", "user", "where", "account=" + q.account, where_cluster, "set",
                      "qos+=" + join(users_missing)}});
    }
  }
  return out;
}

}  // namespace sp
