// preemptctl: the admin's command line for slurm-preempt.
//
//   preemptctl qos-sync [--policy FILE] [--dry-run]
//       Creates or updates the QOS in slurmdbd from the policy (Preempt, PreemptMode,
//       GraceTime, PreemptExemptTime, MaxWall, MaxJobsPerUser, MaxTRESPerUser) with sacctmgr,
//       and prints what it changed. Idempotent: a second run changes nothing.
//   preemptctl check [--policy FILE]
//       Validates the policy file and prints its QOS rules, or the error with file:line:column.
//
// The policy defaults to preempt.yaml beside $SLURM_CONF (or /etc/slurm/slurm.conf).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "policy_loader.hpp"
#include "qos_sync.hpp"
#include "run.hpp"

namespace {

constexpr const char* kUsage =
    "usage: preemptctl qos-sync [--policy FILE] [--dry-run]\n"
    "       preemptctl check [--policy FILE]\n";

std::string default_policy_path() {
  const char* conf = std::getenv("SLURM_CONF");
  std::string c = conf && *conf ? conf : "/etc/slurm/slurm.conf";
  const auto slash = c.rfind('/');
  return (slash == std::string::npos ? std::string(".") : c.substr(0, slash)) + "/preempt.yaml";
}

std::string first_line(const std::string& s) {
  auto start = s.find_first_not_of(" \n");
  if (start == std::string::npos) return "";
  return s.substr(start, s.find('\n', start) - start);
}

int check(const sp::Policy& p) {
  for (const auto& q : p.qos) {
    std::string role = "preemptible";
    if (!q.preemptible) {
      role = "preempts [";
      for (std::size_t i = 0; i < q.preempts.size(); ++i) role += (i ? "," : "") + q.preempts[i];
      role += "]";
    }
    std::printf("qos %s: %s\n", q.name.c_str(), role.c_str());
  }
  std::printf("%s: valid\n", p.source.c_str());
  return 0;
}

int qos_sync(const sp::Policy& p, bool dry_run) {
  auto shown = sp::tool::run({"sacctmgr", "-nP", "show", "qos", "format=" + sp::qos_show_format()});
  if (shown.status != 0) {
    std::fprintf(stderr, "preemptctl: sacctmgr show qos failed: %s\n",
                 first_line(shown.err + shown.out).c_str());
    return 1;
  }
  const auto desired = sp::desired_qos(p);
  const auto changes = sp::plan_qos_changes(desired, sp::parse_qos_show(shown.out));
  for (const auto& want : desired) {
    bool changed = false;
    for (const auto& c : changes) {
      if (c.qos != want.name) continue;
      changed = true;
      for (const auto& d : c.described) {
        std::printf("qos %s: %s%s\n", c.qos.c_str(), d.c_str(), dry_run ? " (dry run)" : "");
      }
      if (dry_run) continue;
      for (auto argv : sp::sacctmgr_commands(c)) {
        argv.insert(argv.begin(), {"sacctmgr", "-i"});
        auto r = sp::tool::run(argv);
        // sacctmgr reports a rejected value on stderr and may still exit 0.
        if (r.status != 0 || r.err.find("error:") != std::string::npos) {
          std::fprintf(stderr, "preemptctl: sacctmgr %s qos %s failed: %s\n", argv[2].c_str(),
                       c.qos.c_str(), first_line(r.err + r.out).c_str());
          return 1;
        }
      }
    }
    if (!changed) std::printf("qos %s: up to date\n", want.name.c_str());
  }
  std::printf("preemptctl: %zu of %zu QOS %s\n", changes.size(), desired.size(),
              dry_run ? "would change" : "changed");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string_view cmd = argv[1];
  std::string policy_path = default_policy_path();
  bool dry_run = false;
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--policy" && i + 1 < argc) {
      policy_path = argv[++i];
    } else if (a == "--dry-run" && cmd == "qos-sync") {
      dry_run = true;
    } else {
      std::fprintf(stderr, "preemptctl: unknown argument '%s'\n%s", argv[i], kUsage);
      return 2;
    }
  }
  if (cmd != "qos-sync" && cmd != "check") {
    std::fprintf(stderr, "preemptctl: unknown command '%s'\n%s", argv[1], kUsage);
    return 2;
  }
  const auto loaded = sp::load_policy_file(policy_path);
  if (const auto* e = sp::error_of(loaded)) {
    std::fprintf(stderr, "preemptctl: %s\n", e->str().c_str());
    return 1;
  }
  const auto policy = sp::policy_of(loaded);
  return cmd == "check" ? check(*policy) : qos_sync(*policy, dry_run);
}
