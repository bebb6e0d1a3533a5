#include "policy_loader.hpp"

#include <yaml.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "checkpoint.hpp"
#include "text.hpp"
#include "units.hpp"

namespace sp {

std::string PolicyError::str() const {
  std::ostringstream os;
  os << file;
  if (line > 0) os << ':' << line << ':' << column;
  os << ": " << message;
  return os.str();
}

namespace {

// Bounds on what the loader accepts, so that no file makes it take more than milliseconds or
// more than a few MiB of memory (it runs at reconfigure, in slurmctld). A real policy is a few
// KB deep 4 levels (qos.standby.limits.max_walltime) with a few hundred values.
constexpr std::size_t kMaxPolicyBytes = std::size_t{1} << 20;
// libyaml's scanner spends time quadratic in the nesting depth (every token rechecks every
// open flow level): 160 KB of '[' took 14 s. The pre-scan stops at the first collection
// deeper than this, before libyaml has read much further.
constexpr int kMaxDepth = 16;
// libyaml's composer checks each anchor against all earlier ones (quadratic), and an alias
// makes the walk below visit its target again: a few dozen are plenty for shared limits.
constexpr int kMaxAnchors = 64;
constexpr int kMaxAliases = 64;
// Mapping entries and list items the walk may visit, aliases counted at every use. It also
// bounds the cross-checks (QOS lookups are linear: QOS x victims <= 10^8 comparisons).
constexpr std::size_t kMaxValues = 20'000;
// Node names all owner groups may expand to together.
constexpr std::size_t kMaxOwnedNodes = 65'536;

// Thrown inside the loader only; load_policy_text() turns it into a PolicyError.
struct Failure {
  yaml_mark_t mark;
  std::string message;
};

using Keys = std::initializer_list<std::string_view>;

std::string join(Keys keys) {
  std::string out;
  for (auto k : keys) {
    if (!out.empty()) out += ", ";
    out += k;
  }
  return out;
}

// A read-only walk over one libyaml document, with typed accessors that fail with the mark
// of the offending node.
class Doc {
 public:
  explicit Doc(yaml_document_t* d) : d_(d) {}

  yaml_node_t* root() const { return yaml_document_get_root_node(d_); }
  yaml_node_t* node(int id) const { return yaml_document_get_node(d_, id); }

  [[noreturn]] static void fail(const yaml_node_t* n, std::string msg) {
    throw Failure{n->start_mark, std::move(msg)};
  }

  static bool is_null(const yaml_node_t* n) {
    if (n->type != YAML_SCALAR_NODE) return false;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
    std::string_view s = scalar_view(n);
    return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
  }

  static std::string_view scalar_view(const yaml_node_t* n) {
    return {reinterpret_cast<const char*>(n->data.scalar.value), n->data.scalar.length};
  }

  // Iterates a mapping; each key must be a scalar from `known`, and appear once.
  void each_key(const yaml_node_t* map, std::string_view where, Keys known,
                const std::function<void(std::string_view, yaml_node_t*)>& fn) const {
    if (is_null(map)) return;
    each_entry(map, where, [&](std::string_view key, yaml_node_t* k, yaml_node_t* v) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        fail(k, "unknown key '" + std::string(key) + "' in " + std::string(where) +
                    " (expected one of: " + join(known) + ")");
      }
      fn(key, v);
    });
  }

  // Iterates a mapping with free-form keys (QOS names, accounts), rejecting duplicates.
  void each_entry(
      const yaml_node_t* map, std::string_view where,
      const std::function<void(std::string_view, yaml_node_t*, yaml_node_t*)>& fn) const {
    if (is_null(map)) return;
    if (map->type != YAML_MAPPING_NODE) fail(map, std::string(where) + " must be a mapping");
    std::set<std::string_view> seen;
    for (auto* p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; ++p) {
      yaml_node_t* k = node(p->key);
      yaml_node_t* v = node(p->value);
      count(k);
      if (k->type != YAML_SCALAR_NODE || scalar_view(k).empty()) {
        fail(k, "keys in " + std::string(where) + " must be non-empty strings");
      }
      std::string_view key = scalar_view(k);
      if (!seen.insert(key).second) {
        fail(k, "duplicate key '" + std::string(key) + "' in " + std::string(where));
      }
      fn(key, k, v);
    }
  }

  static std::string_view scalar(const yaml_node_t* n, std::string_view what) {
    if (n->type != YAML_SCALAR_NODE) fail(n, std::string(what) + " must be a single value");
    return scalar_view(n);
  }

  static std::string str(const yaml_node_t* n, std::string_view what) {
    auto s = scalar(n, what);
    if (s.empty()) fail(n, std::string(what) + " must not be empty");
    return std::string(s);
  }

  static int64_t integer(const yaml_node_t* n, std::string_view what, int64_t lo, int64_t hi) {
    auto s = scalar(n, what);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size()) {
      fail(n, std::string(what) + " must be an integer, not '" + std::string(s) + "'");
    }
    if (v < lo || v > hi) {
      fail(n, std::string(what) + " must be between " + std::to_string(lo) + " and " +
                  std::to_string(hi) + ", not " + std::to_string(v));
    }
    return v;
  }

  // A number from 0 to 1 ("0", "0.25", "1").
  static double fraction(const yaml_node_t* n, std::string_view what) {
    auto s = scalar(n, what);
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size() || !(v >= 0.0 && v <= 1.0)) {
      fail(n, std::string(what) + " must be a number from 0 to 1, not '" + std::string(s) + "'");
    }
    return v;
  }

  static bool boolean(const yaml_node_t* n, std::string_view what) {
    auto s = scalar(n, what);
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    fail(n, std::string(what) + " must be true or false, not '" + std::string(s) + "'");
  }

  static int64_t duration(const yaml_node_t* n, std::string_view what, int64_t hi) {
    auto s = scalar(n, what);
    auto v = parse_duration(s);
    if (!v) {
      fail(n, std::string(what) + " must be a duration such as 90, 90s, 15m, 2h, 3d or " +
                  "1-12:00:00, not '" + std::string(s) + "'");
    }
    if (*v > hi) {
      fail(n, std::string(what) + " must be at most " + std::to_string(hi) + " seconds, not " +
                  std::to_string(*v));
    }
    return *v;
  }

  static int signal(const yaml_node_t* n, std::string_view what) {
    auto s = scalar(n, what);
    auto v = parse_signal(s);
    // deliverable_signal(): not KILL/STOP/CONT (Slurm sends CONT at every preemption), not the
    // private triggers 61-63 every task of a managed job ignores.
    if (!v || !deliverable_signal(*v)) {
      fail(n, std::string(what) + " must be a catchable signal name such as USR1, USR2 or " +
                  "TERM, not '" + std::string(s) + "'");
    }
    return *v;
  }

  // A list of strings; a single scalar counts as a list of one.
  std::vector<std::string> strings(const yaml_node_t* n, std::string_view what) const {
    std::vector<std::string> out;
    if (is_null(n)) return out;
    if (n->type == YAML_SCALAR_NODE) {
      out.push_back(str(n, what));
      return out;
    }
    if (n->type != YAML_SEQUENCE_NODE) fail(n, std::string(what) + " must be a list of names");
    std::set<std::string_view> seen;
    for (auto* i = n->data.sequence.items.start; i < n->data.sequence.items.top; ++i) {
      yaml_node_t* item = node(*i);
      count(item);
      std::string s = str(item, std::string(what) + " entries");
      if (!seen.insert(scalar_view(item)).second) {
        fail(item, "'" + s + "' is listed twice in " + std::string(what));
      }
      out.push_back(std::move(s));
    }
    return out;
  }

 private:
  // Counts one visited value against kMaxValues (aliases make one node count once per use).
  void count(const yaml_node_t* n) const {
    if (++visited_ > kMaxValues) {
      fail(n, "the policy has more than " + std::to_string(kMaxValues) +
                  " values (aliases counted at each use); a policy needs a few hundred");
    }
  }

  yaml_document_t* d_;
  mutable std::size_t visited_ = 0;
};

constexpr int64_t kMaxCount = 1'000'000'000;
constexpr int64_t kMaxWalltimeS = 365LL * 86400;

Limits parse_limits(const Doc& doc, yaml_node_t* n, const std::string& where) {
  Limits l;
  doc.each_key(
      n, where,
      {"max_walltime", "max_running_jobs_per_user", "max_cpus_per_user", "max_gpus_per_user"},
      [&](std::string_view key, yaml_node_t* v) {
        const std::string what = where + "." + std::string(key);
        if (key == "max_walltime") {
          l.max_walltime_s = Doc::duration(v, what, kMaxWalltimeS);
          if (*l.max_walltime_s == 0) Doc::fail(v, what + " must be positive");
        } else if (key == "max_running_jobs_per_user") {
          l.max_running_jobs_per_user = Doc::integer(v, what, 0, kMaxCount);
        } else if (key == "max_cpus_per_user") {
          l.max_cpus_per_user = Doc::integer(v, what, 0, kMaxCount);
        } else {
          l.max_gpus_per_user = Doc::integer(v, what, 0, kMaxCount);
        }
      });
  return l;
}

RequeueMode parse_requeue(const yaml_node_t* n, const std::string& what) {
  auto s = Doc::scalar(n, what);
  if (s == "user") return RequeueMode::User;
  if (s == "default") return RequeueMode::Default;
  if (s == "always") return RequeueMode::Always;
  if (s == "never") return RequeueMode::Never;
  Doc::fail(n, what + " must be one of user, default, always, never, not '" + std::string(s) + "'");
}

struct Marks {
  std::map<std::string, yaml_mark_t, std::less<>> qos;            // QOS name -> its key
  std::map<std::string, yaml_mark_t, std::less<>> preempts_list;  // QOS name -> its list
  std::map<std::string, yaml_mark_t, std::less<>> owner;          // account -> its key
  std::map<std::string, yaml_mark_t, std::less<>> cls;            // class name -> its key
  std::map<std::string, yaml_mark_t, std::less<>> quota;          // account -> its key
  std::optional<yaml_mark_t> default_class;
};

[[noreturn]] void fail_at(const yaml_mark_t& m, std::string msg) {
  throw Failure{m, std::move(msg)};
}

void parse_qos(const Doc& doc, yaml_node_t* n, Policy& p, Marks& marks) {
  p.qos.clear();
  doc.each_entry(n, "qos", [&](std::string_view name, yaml_node_t* k, yaml_node_t* v) {
    QosRule q;
    q.name = std::string(name);
    if (const QosRule* twin = p.find_qos(q.name)) {  // Slurm ignores the case of QOS names
      Doc::fail(k, "qos " + q.name + " is qos " + twin->name +
                       " again: Slurm ignores the case of QOS names; keep one");
    }
    marks.qos[q.name] = k->start_mark;
    const std::string where = "qos." + q.name;
    doc.each_key(v, where,
                 {"preemptible", "preempts", "boost", "grace", "min_runtime", "requeue", "limits"},
                 [&](std::string_view key, yaml_node_t* val) {
                   const std::string what = where + "." + std::string(key);
                   if (key == "preemptible") {
                     q.preemptible = Doc::boolean(val, what);
                   } else if (key == "preempts") {
                     q.preempts = doc.strings(val, what);
                     marks.preempts_list[q.name] = val->start_mark;
                   } else if (key == "boost") {
                     q.boost = static_cast<uint32_t>(Doc::integer(val, what, 0, kMaxBoost));
                   } else if (key == "grace") {
                     q.grace_s = Doc::duration(val, what, kMaxGraceS);
                   } else if (key == "min_runtime") {
                     q.min_runtime_s = Doc::duration(val, what, kMaxWalltimeS);
                   } else if (key == "requeue") {
                     q.requeue = parse_requeue(val, what);
                   } else {
                     q.limits = parse_limits(doc, val, what);
                   }
                 });
    p.qos.push_back(std::move(q));
  });
}

void parse_partitions(const Doc& doc, yaml_node_t* n, Policy& p) {
  doc.each_key(n, "partitions", {"public", "standby"}, [&](std::string_view key, yaml_node_t* v) {
    if (key == "public") {
      p.public_partitions = doc.strings(v, "partitions.public");
      if (p.public_partitions.empty()) Doc::fail(v, "partitions.public must name a partition");
    } else {
      p.standby_partition = Doc::str(v, "partitions.standby");
    }
  });
}

void parse_owners(const Doc& doc, yaml_node_t* n, Policy& p, Marks& marks) {
  std::map<std::string, std::string, std::less<>> node_owner;
  std::size_t owned = 0;
  doc.each_entry(n, "owners", [&](std::string_view account, yaml_node_t* k, yaml_node_t* v) {
    OwnerGroup g;
    g.account = std::string(account);
    if (const OwnerGroup* twin = p.find_owner(g.account)) {  // so does it for account names
      Doc::fail(k, "owners." + g.account + " is owners." + twin->account +
                       " again: Slurm ignores the case of account names; keep one");
    }
    marks.owner[g.account] = k->start_mark;
    const std::string where = "owners." + g.account;
    yaml_node_t* nodes_node = nullptr;
    doc.each_key(v, where, {"partitions", "nodes", "qos"},
                 [&](std::string_view key, yaml_node_t* val) {
                   if (key == "partitions") {
                     g.partitions = doc.strings(val, where + ".partitions");
                   } else if (key == "qos") {
                     g.qos = Doc::str(val, where + ".qos");
                   } else {
                     g.nodes = Doc::str(val, where + ".nodes");
                     nodes_node = val;
                   }
                 });
    if (g.partitions.empty()) Doc::fail(v, where + " must name its partitions");
    if (nodes_node == nullptr) Doc::fail(v, where + " must name its nodes");
    if (owned >= kMaxOwnedNodes) {
      Doc::fail(nodes_node, "owner groups name more than " + std::to_string(kMaxOwnedNodes) +
                                " nodes together");
    }
    auto names = expand_hostlist(g.nodes, kMaxOwnedNodes - owned);
    if (!names) {
      Doc::fail(nodes_node, where + ".nodes is not a valid hostlist of at most " +
                                std::to_string(kMaxOwnedNodes - owned) + " nodes: '" + g.nodes +
                                "'");
    }
    owned += names->size();
    for (const auto& node : *names) {
      auto [it, fresh] = node_owner.emplace(node, g.account);
      if (!fresh) {
        Doc::fail(nodes_node, "node " + node + " is owned by both " + it->second + " and " +
                                  g.account + "; a node belongs to one owner group");
      }
    }
    g.node_names = std::move(*names);
    p.owners.push_back(std::move(g));
  });
}

void parse_checkpoint(const Doc& doc, yaml_node_t* n, Policy& p) {
  auto& c = p.checkpoint;
  doc.each_key(n, "checkpoint", {"signal", "grace", "steps", "dir_env", "notice_file"},
               [&](std::string_view key, yaml_node_t* v) {
                 const std::string what = "checkpoint." + std::string(key);
                 if (key == "signal") {
                   c.signal = Doc::signal(v, what);
                 } else if (key == "grace") {
                   c.grace_s = Doc::duration(v, what, kMaxGraceS);
                 } else if (key == "steps") {
                   auto s = Doc::scalar(v, what);
                   if (s == "gpu") {
                     c.steps = SignalSteps::Gpu;
                   } else if (s == "all") {
                     c.steps = SignalSteps::All;
                   } else {
                     Doc::fail(v, what + " must be gpu or all, not '" + std::string(s) + "'");
                   }
                 } else if (key == "dir_env") {
                   c.dir_env = Doc::str(v, what);
                 } else {
                   c.notice_file = Doc::str(v, what);
                   if (c.notice_file.find('/') != std::string::npos || c.notice_file == "." ||
                       c.notice_file == "..") {
                     Doc::fail(v, what + " must be a plain file name, not a path");
                   }
                 }
               });
}

void parse_classes(const Doc& doc, yaml_node_t* n, Policy& p, Marks& marks) {
  p.classes.clear();
  doc.each_entry(n, "classes", [&](std::string_view name, yaml_node_t* k, yaml_node_t* v) {
    PriorityClass c;
    c.name = std::string(name);
    if (const PriorityClass* twin = p.find_class(c.name)) {  // a QOS name: Slurm ignores case
      Doc::fail(k, "classes." + c.name + " is classes." + twin->name +
                       " again: Slurm ignores the case of QOS names; keep one");
    }
    marks.cls[c.name] = k->start_mark;
    const std::string where = "classes." + c.name;
    doc.each_key(v, where, {"priority", "preemptible", "grace", "min_runtime"},
                 [&](std::string_view key, yaml_node_t* val) {
                   const std::string what = where + "." + std::string(key);
                   if (key == "priority") {
                     c.priority = static_cast<uint32_t>(Doc::integer(val, what, 0, 1000));
                   } else if (key == "preemptible") {
                     c.preemptible = Doc::boolean(val, what);
                   } else if (key == "grace") {
                     c.grace_s = Doc::duration(val, what, kMaxGraceS);
                   } else {
                     c.min_runtime_s = Doc::duration(val, what, kMaxWalltimeS);
                   }
                 });
    if (!c.preemptible && (c.grace_s >= 0 || c.min_runtime_s > 0)) {
      Doc::fail(k, where + " sets grace or min_runtime but is not preemptible");
    }
    p.classes.push_back(std::move(c));
  });
}

void parse_quotas(const Doc& doc, yaml_node_t* n, Policy& p, Marks& marks) {
  doc.each_entry(n, "quotas", [&](std::string_view account, yaml_node_t* k, yaml_node_t* v) {
    Quota q;
    q.account = std::string(account);
    if (const Quota* twin = p.find_quota(q.account)) {
      Doc::fail(k, "quotas." + q.account + " is quotas." + twin->account +
                       " again: Slurm ignores the case of account names; keep one");
    }
    marks.quota[q.account] = k->start_mark;
    const std::string where = "quotas." + q.account;
    bool has_gpus = false;
    doc.each_key(v, where, {"gpus", "limit", "partitions", "over_quota_weight", "cpus"},
                 [&](std::string_view key, yaml_node_t* val) {
                   const std::string what = where + "." + std::string(key);
                   if (key == "gpus") {
                     q.gpus = Doc::integer(val, what, 0, kMaxCount);
                     has_gpus = true;
                   } else if (key == "limit") {
                     q.limit = Doc::integer(val, what, 0, kMaxCount);
                   } else if (key == "partitions") {
                     q.partitions = doc.strings(val, what);
                     if (q.partitions.empty()) Doc::fail(val, what + " must name a partition");
                   } else if (key == "over_quota_weight") {
                     q.over_quota_weight = static_cast<uint32_t>(Doc::integer(val, what, 0, 1000));
                   } else {
                     q.cpus = Doc::integer(val, what, 0, kMaxCount);
                   }
                 });
    if (!has_gpus) Doc::fail(v, where + " must give gpus (the project's guaranteed GPUs)");
    if (q.limit >= 0 && q.limit < q.gpus) {
      Doc::fail(v, where + ".limit " + std::to_string(q.limit) + " is below its quota of " +
                       std::to_string(q.gpus) + " GPUs; raise the limit or lower gpus");
    }
    p.quotas.push_back(std::move(q));
  });
}

void parse_default_class(const Doc& doc, yaml_node_t* n, Policy& p, Marks& marks) {
  marks.default_class = n->start_mark;
  doc.each_key(n, "default_class", {"batch", "interactive"},
               [&](std::string_view key, yaml_node_t* v) {
                 (key == "batch" ? p.default_class.batch : p.default_class.interactive) =
                     Doc::str(v, "default_class." + std::string(key));
               });
}

void parse_priority(const Doc& doc, yaml_node_t* n, Policy& p) {
  auto& w = p.priority;
  doc.each_key(
      n, "priority", {"weights", "half_life", "max_age", "calc_period", "lost_work_charge"},
      [&](std::string_view key, yaml_node_t* v) {
        if (key == "lost_work_charge") {
          w.lost_work_charge = Doc::fraction(v, "priority.lost_work_charge");
        } else if (key == "half_life") {
          w.half_life_s = Doc::duration(v, "priority.half_life", kMaxWalltimeS);
          if (w.half_life_s == 0) Doc::fail(v, "priority.half_life must be positive");
        } else if (key == "calc_period") {
          w.calc_period_s = Doc::duration(v, "priority.calc_period", int64_t{24} * 3600);
          if (w.calc_period_s == 0) Doc::fail(v, "priority.calc_period must be positive");
        } else if (key == "max_age") {
          w.max_age_s = Doc::duration(v, "priority.max_age", kMaxWalltimeS);
          if (w.max_age_s == 0) Doc::fail(v, "priority.max_age must be positive");
        } else {
          doc.each_key(v, "priority.weights",
                       {"age", "fairshare", "qos", "partition", "job_size", "class", "over_quota"},
                       [&](std::string_view wk, yaml_node_t* wv) {
                         const std::string what = "priority.weights." + std::string(wk);
                         auto val = static_cast<uint32_t>(Doc::integer(wv, what, 0, kMaxWeight));
                         if (wk == "age")
                           w.age = val;
                         else if (wk == "fairshare")
                           w.fairshare = val;
                         else if (wk == "qos")
                           w.qos = val;
                         else if (wk == "partition")
                           w.partition = val;
                         else if (wk == "job_size")
                           w.job_size = val;
                         else if (wk == "class")
                           w.priority_class = val;
                         else
                           w.over_quota = val;
                       });
        }
      });
}

// Cross-checks that need the whole file: preemptor/preemptee roles, references, overlaps.
void validate(const Policy& p, const Marks& marks, const yaml_node_t* root) {
  for (const auto& q : p.qos) {
    auto mark_of = [&](const auto& map) {
      auto it = map.find(q.name);
      return it == map.end() ? root->start_mark : it->second;
    };
    const yaml_mark_t at = mark_of(marks.qos);
    const yaml_mark_t list_at = mark_of(marks.preempts_list);
    if (q.preemptible && !q.preempts.empty()) {
      fail_at(at, "qos " + q.name +
                      " is both preemptible and a preemptor; a job is one or the other, never "
                      "both");
    }
    for (const auto& victim : q.preempts) {
      if (same_name(victim, q.name)) fail_at(list_at, "qos " + q.name + " cannot preempt itself");
      const QosRule* v = p.find_qos(victim);
      if (v == nullptr) {
        fail_at(list_at,
                "qos " + q.name + " preempts '" + victim + "', which is not defined in qos");
      }
      if (!v->preemptible) {
        fail_at(list_at, "qos " + q.name + " preempts '" + victim + "', which is not preemptible" +
                             " (set qos." + victim + ".preemptible: true)");
      }
    }
    if (!q.preemptible && (q.min_runtime_s > 0 || q.requeue != RequeueMode::User)) {
      fail_at(at, "qos " + q.name + " sets min_runtime or requeue but is not preemptible");
    }
  }
  // Only classes the file declares: a site's qos: rule named like a default class (train,
  // interactive, ...) stays valid as long as the file does not make that name a class.
  for (const auto& [name, at] : marks.cls) {
    if (const QosRule* q = p.find_qos(name)) {
      fail_at(at, "classes." + name + " is also qos." + q->name +
                      ": a class is a QOS of its own; rename one of them");
    }
  }
  if (!p.quotas.empty()) {
    const yaml_mark_t at = marks.default_class.value_or(root->start_mark);
    for (const std::string* name : {&p.default_class.batch, &p.default_class.interactive}) {
      if (p.find_class(*name) == nullptr) {
        fail_at(at, "default_class names '" + *name + "', which is not a class in classes:");
      }
    }
  }
  for (const auto& q : p.quotas) {
    if (p.find_owner(q.account) != nullptr) {
      fail_at(marks.quota.at(q.account), "quotas." + q.account + " is also an owner group; " +
                                             "an account has nodes or a quota, not both");
    }
  }
  std::set<std::string_view> shared(p.public_partitions.begin(), p.public_partitions.end());
  shared.insert(p.standby_partition);
  for (const auto& g : p.owners) {
    if (const QosRule* q = p.find_qos(g.qos); q != nullptr && q->preemptible) {
      fail_at(marks.owner.at(g.account), "owners." + g.account + ".qos " + g.qos +
                                             " is preemptible; an owner group's jobs must not be");
    }
    for (const auto& part : g.partitions) {
      if (shared.count(part) != 0) {
        fail_at(marks.owner.at(g.account), "owners." + g.account + " names partition " + part +
                                               ", which is also a public or standby partition");
      }
    }
  }
}

void parse_starvation(const Doc& doc, yaml_node_t* n, Policy& p) {
  auto& s = p.starvation;
  doc.each_key(n, "starvation", {"max_preemptions", "window", "protect_for"},
               [&](std::string_view key, yaml_node_t* v) {
                 const std::string what = "starvation." + std::string(key);
                 if (key == "max_preemptions") {
                   s.max_preemptions =
                       static_cast<uint32_t>(Doc::integer(v, what, 0, kMaxStarvationPreemptions));
                 } else if (key == "window") {
                   s.window_s = Doc::duration(v, what, kMaxStarvationWindowS);
                 } else {
                   s.protect_for_s = Doc::duration(v, what, kMaxStarvationWindowS);
                 }
               });
}

// Returns the node of story.field (null when absent), for a later check against starvation:.
const yaml_node_t* parse_story(const Doc& doc, yaml_node_t* n, Policy& p) {
  const yaml_node_t* field = nullptr;
  doc.each_key(n, "story", {"field"}, [&](std::string_view /*key*/, yaml_node_t* v) {
    field = v;
    const auto s = Doc::scalar(v, "story.field");
    const auto f = parse_story_field_key(s);
    if (!f) {
      Doc::fail(v, "story.field must be one of admin_comment, system_comment, comment, not '" +
                       std::string(s) + "'");
    }
    p.story.field = *f;
  });
  return field;
}

Policy parse_document(const Doc& doc) {
  Policy p = default_policy();
  yaml_node_t* root = doc.root();
  if (root == nullptr || Doc::is_null(root)) return p;  // empty file: all defaults
  Marks marks;
  const yaml_node_t* story_field = nullptr;
  doc.each_key(root, "the top level",
               {"version", "qos", "partitions", "owners", "checkpoint", "classes", "quotas",
                "default_class", "priority", "starvation", "story"},
               [&](std::string_view key, yaml_node_t* v) {
                 if (key == "version")
                   Doc::integer(v, "version", 1, 1);
                 else if (key == "qos")
                   parse_qos(doc, v, p, marks);
                 else if (key == "partitions")
                   parse_partitions(doc, v, p);
                 else if (key == "owners")
                   parse_owners(doc, v, p, marks);
                 else if (key == "checkpoint")
                   parse_checkpoint(doc, v, p);
                 else if (key == "classes")
                   parse_classes(doc, v, p, marks);
                 else if (key == "quotas")
                   parse_quotas(doc, v, p, marks);
                 else if (key == "default_class")
                   parse_default_class(doc, v, p, marks);
                 else if (key == "starvation")
                   parse_starvation(doc, v, p);
                 else if (key == "story")
                   story_field = parse_story(doc, v, p);
                 else
                   parse_priority(doc, v, p);
               });
  // A site's qos: rule named like a default class (train, interactive, ...) is that QOS, not
  // the class, when the file declares no classes: of its own (found by fuzzing: both at once
  // made --qos=interactive both a QOS rule and a preemptible class).
  if (marks.cls.empty()) {
    std::erase_if(p.classes, [&](const PriorityClass& c) { return p.find_qos(c.name) != nullptr; });
  }
  validate(p, marks, root);
  if (p.story.field == StoryField::Comment && p.starvation.enabled()) {
    // Anti-starvation counts the preemptions the story notes: in Comment, which a job's
    // owner may write, a forged note would buy protection from preemption.
    Doc::fail(story_field,
              "story.field comment cannot go with starvation.max_preemptions: a "
              "job's owner can write its Comment and so forge the preemptions "
              "that protect it; keep the story in admin_comment");
  }
  finalize(p);
  return p;
}

PolicyError error_at(const std::string& name, const yaml_mark_t& m, std::string msg) {
  return PolicyError{name, static_cast<int>(m.line) + 1, static_cast<int>(m.column) + 1,
                     std::move(msg)};
}

PolicyError yaml_error(const std::string& name, const yaml_parser_t& parser) {
  std::string msg = parser.problem ? parser.problem : "malformed YAML";
  if (parser.context) msg = std::string(parser.context) + ": " + msg;
  return error_at(name, parser.problem_mark, "invalid YAML: " + msg);
}

// Owns a libyaml parser reading `text`.
class Parser {
 public:
  explicit Parser(std::string_view text) {
    ok_ = yaml_parser_initialize(&parser_) != 0;
    if (ok_) {
      yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                   text.size());
    }
  }
  ~Parser() {
    if (ok_) yaml_parser_delete(&parser_);
  }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;
  bool ok() const { return ok_; }
  yaml_parser_t* get() { return &parser_; }

 private:
  yaml_parser_t parser_{};
  bool ok_ = false;
};

// Walks the event stream (no document is built) and stops at the first event past the limits
// above, so that libyaml never gets to spend quadratic time on a hostile file. Returns the
// error, or nothing when the stream is within bounds (syntax errors included: the same
// message as yaml_parser_load would give).
std::optional<PolicyError> prescan(std::string_view text, const std::string& name) {
  Parser parser(text);
  if (!parser.ok()) return PolicyError{name, 0, 0, "out of memory"};
  int depth = 0;
  int anchors = 0;
  int aliases = 0;
  while (true) {
    yaml_event_t event;
    if (yaml_parser_parse(parser.get(), &event) == 0) return yaml_error(name, *parser.get());
    const yaml_event_type_t type = event.type;
    const yaml_mark_t mark = event.start_mark;
    const char* anchor = nullptr;
    if (type == YAML_SEQUENCE_START_EVENT) {
      anchor = reinterpret_cast<const char*>(event.data.sequence_start.anchor);
    } else if (type == YAML_MAPPING_START_EVENT) {
      anchor = reinterpret_cast<const char*>(event.data.mapping_start.anchor);
    } else if (type == YAML_SCALAR_EVENT) {
      anchor = reinterpret_cast<const char*>(event.data.scalar.anchor);
    }
    const bool anchored = anchor != nullptr;
    yaml_event_delete(&event);
    if (type == YAML_STREAM_END_EVENT) return std::nullopt;
    if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) {
      if (++depth > kMaxDepth) {
        return error_at(name, mark,
                        "nested deeper than " + std::to_string(kMaxDepth) +
                            " levels; a policy needs 4 (for example qos.standby.limits)");
      }
    } else if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT) {
      --depth;
    } else if (type == YAML_ALIAS_EVENT && ++aliases > kMaxAliases) {
      return error_at(
          name, mark,
          "more than " + std::to_string(kMaxAliases) + " aliases (*name) in the policy");
    }
    if (anchored && ++anchors > kMaxAnchors) {
      return error_at(
          name, mark,
          "more than " + std::to_string(kMaxAnchors) + " anchors (&name) in the policy");
    }
  }
}

std::string size_error() {
  return "the policy is larger than " + std::to_string(kMaxPolicyBytes >> 20) +
         " MiB; a policy is a few KB: check that this is the right file";
}

}  // namespace

PolicyResult load_policy_text(std::string_view text, const std::string& name) {
  if (text.size() > kMaxPolicyBytes) return PolicyError{name, 0, 0, size_error()};
  if (auto e = prescan(text, name)) return *e;
  Parser parser(text);
  if (!parser.ok()) return PolicyError{name, 0, 0, "out of memory"};
  yaml_document_t document;
  if (yaml_parser_load(parser.get(), &document) == 0) return yaml_error(name, *parser.get());
  PolicyResult result;
  try {
    Doc doc(&document);
    // A second document in the stream is almost certainly a mistake: refuse it.
    yaml_document_t extra;
    if (yaml_parser_load(parser.get(), &extra) != 0) {
      const bool has_more = yaml_document_get_root_node(&extra) != nullptr;
      yaml_mark_t m = extra.start_mark;
      yaml_document_delete(&extra);
      if (has_more) throw Failure{m, "the policy must be a single YAML document"};
    }
    auto policy = std::make_shared<Policy>(parse_document(doc));
    policy->source = name;
    result = std::shared_ptr<const Policy>(std::move(policy));
  } catch (const Failure& f) {
    result = error_at(name, f.mark, f.message);
  } catch (const std::exception& e) {
    result = PolicyError{name, 0, 0, e.what()};
  }
  yaml_document_delete(&document);
  return result;
}

PolicyResult load_policy_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return PolicyError{path, 0, 0, "cannot open the policy file"};
  std::string text;
  text.resize(kMaxPolicyBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return PolicyError{path, 0, 0, "cannot read the policy file"};
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxPolicyBytes) return PolicyError{path, 0, 0, size_error()};
  return load_policy_text(text, path);
}

}  // namespace sp
