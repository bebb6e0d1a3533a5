#include "sentinel.hpp"

#include <chrono>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "pause_mark.hpp"
#include "units.hpp"

extern char** environ;

namespace sp::spank {
namespace {

std::string read_file(const std::string& path) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

// pid -> parent pid, for every process visible in /proc.
std::map<pid_t, pid_t> parents() {
  std::map<pid_t, pid_t> out;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    const std::string stat = read_file("/proc/" + std::string(e->d_name) + "/stat");
    const auto close_paren = stat.rfind(')');  // comm may hold spaces and parentheses
    if (close_paren == std::string::npos) continue;
    int ppid = 0;
    char state = 0;
    if (std::sscanf(stat.c_str() + close_paren + 1, " %c %d", &state, &ppid) == 2) {
      out[static_cast<pid_t>(pid)] = static_cast<pid_t>(ppid);
    }
  }
  ::closedir(d);
  return out;
}

std::vector<pid_t> descendants(const std::map<pid_t, pid_t>& tree, pid_t root) {
  std::vector<pid_t> out;
  std::vector<pid_t> frontier{root};
  while (!frontier.empty()) {
    const pid_t p = frontier.back();
    frontier.pop_back();
    for (const auto& [child, parent] : tree) {
      if (parent == p) {
        out.push_back(child);
        frontier.push_back(child);
      }
    }
  }
  return out;
}

// Writes to the job's error output: the standard error of the task that started the sentinel,
// or of another task of the step (slurmstepd's children) once that one has exited, opened when
// there is something to say. The sentinel holds no descriptor of the step's output, so that
// the step's I/O ends when its tasks do, not when the sentinel is gone.
void say(const SentinelConfig& c, const std::string& line) {
  const std::string msg = "slurm-preempt checkpoint: " + line + "\n";
  std::vector<pid_t> tasks;
  for (const auto& [pid, parent] : parents()) {
    if (parent != c.stepd_pid || pid == ::getpid()) continue;
    if (pid == c.task_pid) {
      tasks.insert(tasks.begin(), pid);
    } else {
      tasks.push_back(pid);
    }
  }
  for (const pid_t task : tasks) {
    const std::string err = "/proc/" + std::to_string(task) + "/fd/2";
    const int fd = ::open(err.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) continue;
    (void)!::write(fd, msg.data(), msg.size());
    ::close(fd);
    return;
  }
}

bool is_slurm_client(pid_t pid) {
  char buf[4096];
  const std::string link = "/proc/" + std::to_string(pid) + "/exe";
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return false;
  const std::string_view exe(buf, static_cast<size_t>(n));
  const std::string_view base = exe.substr(exe.rfind('/') + 1);
  return base == "srun" || base == "salloc" || base == "sattach";
}

void write_notice(const SentinelConfig& c, const Notice& n) {
  if (c.notice_path.empty()) return;
  const auto slash = c.notice_path.rfind('/');
  const std::string dir = c.notice_path.substr(0, slash == 0 ? 1 : slash);
  const std::string name = c.notice_path.substr(slash + 1);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    say(c, "not writing " + c.notice_path + ": cannot open its directory: " + std::strerror(errno));
    return;
  }
  struct stat st {};
  if (::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      (!S_ISREG(st.st_mode) || st.st_uid != ::getuid())) {
    say(c, "not writing " + c.notice_path + ": it exists and is not a file of yours");
    ::close(dfd);
    return;
  }
  // Every node's sentinel writes the same notice, maybe on a shared file system, and two nodes'
  // sentinels may have the same pid (a pid namespace per node): the host names them apart.
  char host[256] = {};
  (void)::gethostname(host, sizeof host - 1);
  const std::string tmp = "." + name + "." + host + "." + std::to_string(::getpid());
  const int fd =
      ::openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    say(c, "not writing " + c.notice_path + ": " + std::strerror(errno));
    ::close(dfd);
    return;
  }
  const std::string text = format_notice(n);
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok || ::renameat(dfd, tmp.c_str(), dfd, name.c_str()) != 0) {
    say(c, "not writing " + c.notice_path + ": " + std::strerror(errno));
    (void)::unlinkat(dfd, tmp.c_str(), 0);
  }
  ::close(dfd);
}

// `scontrol show job ID` as the job's user, with times as epoch seconds, within `timeout_ms`;
// "" when it fails or takes longer (the caller falls back to what it knows itself). A child
// process: the sentinel shares no Slurm library state with slurmstepd's threads.
std::string show_job(uint32_t job_id, int timeout_ms) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return "";
  std::vector<std::string> env_text{"SLURM_TIME_FORMAT=%s"};
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with("SLURM_TIME_FORMAT=")) continue;
    env_text.emplace_back(*e);
  }
  std::vector<char*> envp;
  envp.reserve(env_text.size() + 1);
  for (auto& s : env_text) envp.push_back(s.data());
  envp.push_back(nullptr);
  const std::string id = std::to_string(job_id);
  char show[] = "show";
  char job[] = "job";
  char scontrol[] = "scontrol";
  char* argv[] = {scontrol, show, job, const_cast<char*>(id.c_str()), nullptr};
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out[0]);
    ::close(out[1]);
    return "";
  }
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(out[1], STDOUT_FILENO);
    ::execvpe("scontrol", argv, envp.data());
    ::execve("/usr/bin/scontrol", argv, envp.data());
    ::_exit(127);
  }
  ::close(out[1]);
  std::string text;
  const auto now_ms = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
  };
  const int64_t until = now_ms() + timeout_ms;
  bool complete = false;
  for (;;) {
    const int64_t left = until - now_ms();
    pollfd p{out[0], POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 200))) < 0) break;
    if (p.revents == 0) continue;
    char buf[4096];
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n <= 0) {
      complete = n == 0;
      break;
    }
    if (text.size() < (size_t{1} << 18)) text.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  if (!complete) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return complete && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? text : "";
}

// The processes of this step on this node: slurmstepd's descendants, and the workers of this
// run and step that have left that tree (their parent exited and they were reparented: only
// the mark the SPANK plugin put in their step's environment still says whose they are,
// lib/checkpoint.hpp kEnvStepMark). The sentinel runs as the job's user: another user's
// environment cannot be read.
std::vector<pid_t> step_processes(const SentinelConfig& c) {
  const auto tree = parents();
  std::vector<pid_t> out = descendants(tree, c.stepd_pid);
  const std::set<pid_t> in_tree(out.begin(), out.end());
  for (const auto& [pid, parent] : tree) {
    if (pid == ::getpid() || pid == c.stepd_pid || in_tree.count(pid) != 0) continue;
    const std::string environ = read_file("/proc/" + std::to_string(pid) + "/environ");
    if (!c.step_mark.empty() && environ_has_mark(environ, c.step_mark)) out.push_back(pid);
  }
  return out;
}

void deliver(const SentinelConfig& c) {
  const StepFacts step{c.batch, c.has_gpus};
  const int sig = c.checkpoint.signal;
  for (const pid_t pid : step_processes(c)) {
    if (pid == ::getpid()) continue;
    const auto mask = parse_sigcgt(read_file("/proc/" + std::to_string(pid) + "/status"));
    ProcessFacts proc;
    proc.is_batch_shell = c.batch && pid == c.task_pid;
    proc.catches_signal = mask && catches(*mask, sig);
    proc.slurm_client = proc.catches_signal && is_slurm_client(pid);
    if (should_deliver(proc, step, c.checkpoint.gpu_steps_only)) (void)::kill(pid, sig);
  }
}

// Who preempted the job and why, added to the notice once the watcher's note is there (it
// writes it as it starts the grace, just after Slurm sent the batch shell's trigger). After the
// signal, never before: every node's steps get theirs at once, whatever slurmctld's answer
// time; a handler that reads the notice at once may not see these fields yet. Looked for for
// up to kPreemptorLookupMs; slurmstepd waits for it at the step's end (wait_for_notices).
void add_preemptor(const SentinelConfig& c, Notice n) {
  if (c.notice_path.empty()) return;  // no notice to add them to
  const int64_t started = static_cast<int64_t>(std::time(nullptr));
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kPreemptorLookupMs);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          until - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) return;
    const ShownPause shown = shown_pause(show_job(c.job_id, static_cast<int>(left)));
    if (shown.preemption && shown.preemption->at >= started - 5) {
      n.preempted_by = shown.preemption->by_job;
      n.preemptor_qos = shown.preemption->qos;
      n.preemptor_account = shown.preemption->account;
      n.preempt_reason = shown.preemption->reason;
      write_notice(c, n);
      return;
    }
    ::usleep(100 * 1000);
  }
}

void set_name(std::string_view name) { ::prctl(PR_SET_NAME, std::string(name).c_str()); }

// The sentinel's busy name (kSentinelBusyComm) while this object lives: from before the
// signal's delivery, so that no task can have exited of it before slurmstepd can see the
// sentinel busy, to the notice's last write.
class CompletingNotice {
 public:
  CompletingNotice() { set_name(kSentinelBusyComm); }
  ~CompletingNotice() { set_name(kSentinelComm); }
  CompletingNotice(const CompletingNotice&) = delete;
  CompletingNotice& operator=(const CompletingNotice&) = delete;
};

[[noreturn]] void run(const SentinelConfig& c) {
  // Its parent is slurmstepd (CLONE_PARENT): it outlives the task that started it, and goes
  // with slurmstepd should that one die without killing the step's processes.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != c.stepd_pid) ::_exit(0);  // slurmstepd is already gone
  set_name(kSentinelComm);
  // Hold nothing open, so the step's I/O and pipes close when its tasks end (say() reopens
  // the job's error output for a refusal).
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
  }
  ::close_range(3, ~0U, 0);
  for (int s = 1; s < 32; ++s) {
    if (s != SIGKILL && s != SIGSTOP && s != SIGTERM && s != SIGCHLD) ::signal(s, SIG_IGN);
  }
  sigset_t triggers;
  sigemptyset(&triggers);
  sigaddset(&triggers, kTriggerPreempt);
  sigaddset(&triggers, kTriggerTimeLimit);
  sigaddset(&triggers, kTriggerPause);
  ::sigprocmask(SIG_SETMASK, &triggers, nullptr);  // it was born with every signal blocked
  bool done[3] = {false, false, false};
  int64_t time_limit_acted_end = 0;  // the end of the last time-limit notice (0: none yet)
  for (;;) {
    siginfo_t info{};
    const int signo = ::sigwaitinfo(&triggers, &info);
    if (signo < 0) continue;
    const auto reason = reason_for_trigger(signo);
    if (!reason) continue;
    bool& seen = done[static_cast<int>(*reason)];
    if (!acts_on_trigger(*reason, seen)) continue;
    seen = true;
    std::optional<CompletingNotice> completing;
    if (*reason == NoticeReason::Preemption && !c.notice_path.empty()) completing.emplace();
    Notice n;
    n.reason = *reason;
    n.signal = c.checkpoint.signal;
    const auto now = static_cast<int64_t>(std::time(nullptr));
    if (*reason == NoticeReason::TimeLimit) {
      const TimeLimitNotice t = time_limit_notice(shown_pause(show_job(c.job_id, 2000)).end_time,
                                                  time_limit_acted_end, now, c.checkpoint.lead_s);
      if (!t.act) continue;
      time_limit_acted_end = t.deadline;
      n.deadline = t.deadline;
      n.grace_s = std::max<int64_t>(0, t.deadline - now);
    } else {
      n.grace_s = c.checkpoint.grace_s;
      n.deadline = now + n.grace_s;
    }
    n.requeue = *reason != NoticeReason::TimeLimit && c.checkpoint.requeue;
    n.job_id = c.job_id;
    n.restart_count = c.restart_count;
    if (*reason == NoticeReason::Pause) {
      // A pause's grace may be shorter than the promise's (preemptctl pause --grace), and the
      // notice names who paused: both are slurmctld's to tell (EndTime, the pause mark).
      const ShownPause shown = shown_pause(show_job(c.job_id, 2000));
      const auto shown_at = static_cast<int64_t>(std::time(nullptr));
      if (shown.end_time > 0 && shown.end_time <= n.deadline + 1) {
        n.deadline = shown.end_time;
        n.grace_s = std::max<int64_t>(0, shown.end_time - shown_at);
      }
      if (shown.mark.paused) {
        n.paused_by = shown.mark.who;
        n.paused_by_admin = shown.mark.admin;
      }
    }
    write_notice(c, n);  // first, so a handler can read it
    deliver(c);
    if (*reason == NoticeReason::Preemption) add_preemptor(c, n);
  }
}

// What the sentinel starts with. Allocated by the task and never freed there: the task execs.
struct Start {
  SentinelConfig config;
  int gate_read = -1;
  int gate_write = -1;
};

// The sentinel shares the task's memory until the task execs (see start_sentinel), so until
// then it runs on its own stack, touches no shared state, and makes raw system calls only.
int sentinel_entry(void* arg) {
  const auto* start = static_cast<const Start*>(arg);
  ::syscall(SYS_close, start->gate_write);  // its copy: the task's is the one that matters
  char c = 0;
  while (::syscall(SYS_read, start->gate_read, &c, 1) > 0) {
  }
  // End of file: the task has exec'd (its write end was close-on-exec) or is gone. The
  // memory it left behind is now this process' alone, as after a fork.
  try {
    run(start->config);
  } catch (...) {
    ::_exit(1);  // an exception must not unwind into clone's start code (std::terminate)
  }
}

}  // namespace

pid_t start_sentinel(const SentinelConfig& config) {
  // Not fork(): copying slurmstepd's address space costs the step launch 0.3-1.3 ms (more
  // under gVisor), and tearing the copy down as much again at step end. clone(CLONE_VM) shares
  // it instead (0.03 ms) and the sentinel waits until the task has exec'd before it runs any
  // library code; from then on it owns the memory the exec released. CLONE_PARENT makes it
  // slurmstepd's child, not the task's, at no extra cost (see sentinel.hpp, "Lifetime").
  constexpr size_t kStack = size_t{1} << 20;
  int gate[2];
  if (::pipe2(gate, O_CLOEXEC) != 0) return -1;
  void* stack = ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    ::close(gate[0]);
    ::close(gate[1]);
    return -1;
  }
  auto* start = new Start{config, gate[0], gate[1]};  // NOLINT: the sentinel's, never freed
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &old);  // no handler of the task's may run in the sentinel
  const pid_t pid = ::clone(sentinel_entry, static_cast<char*>(stack) + kStack,
                            CLONE_VM | CLONE_PARENT | SIGCHLD, start);
  const int saved = errno;
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ::close(gate[0]);  // the task keeps the write end until its exec
  if (pid < 0) {
    ::close(gate[1]);
    ::munmap(stack, kStack);
    delete start;
    errno = saved;
  }
  return pid;
}

namespace {

// This process' children: from each of its threads' children lists, else (a kernel without
// CONFIG_PROC_CHILDREN) from a walk of /proc.
std::vector<pid_t> own_children() {
  std::vector<pid_t> out;
  bool listed = false;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const std::string path = std::string("/proc/self/task/") + e->d_name + "/children";
      if (::access(path.c_str(), R_OK) != 0) continue;
      listed = true;
      const std::string text = read_file(path);
      const char* p = text.c_str();
      char* end = nullptr;
      for (long pid = std::strtol(p, &end, 10); end != p; pid = std::strtol(p, &end, 10)) {
        if (pid > 0) out.push_back(static_cast<pid_t>(pid));
        p = end;
      }
    }
    ::closedir(d);
  }
  if (!listed) {
    const pid_t self = ::getpid();
    for (const auto& [pid, parent] : parents()) {
      if (parent == self) out.push_back(pid);
    }
  }
  return out;
}

}  // namespace

std::vector<pid_t> wait_for_notices(int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::vector<pid_t> busy;
    for (const pid_t pid : own_children()) {
      if (sentinel_completing_notice(read_file("/proc/" + std::to_string(pid) + "/stat"))) {
        busy.push_back(pid);
      }
    }
    if (busy.empty() || std::chrono::steady_clock::now() >= until) return busy;
    ::usleep(10 * 1000);
  }
}

void remove_stale_notice(const std::string& notice_path) {
  struct stat st {};
  if (::lstat(notice_path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::getuid()) {
    (void)::unlink(notice_path.c_str());
  }
}

std::string prepare_checkpoint_dir(const std::string& dir) {
  // Create missing components one by one, as the user (never as root: we are in the task).
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return "cannot create checkpoint directory " + prefix + ": " + std::strerror(errno);
    }
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENOTDIR) {
      return "refusing checkpoint directory " + dir + ": it is a symlink or not a directory";
    }
    return "cannot open checkpoint directory " + dir + ": " + std::strerror(errno);
  }
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  const bool writable = ::faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) == 0;
  ::close(fd);
  if (!stat_ok) return "cannot stat checkpoint directory " + dir;
  if (st.st_uid != ::getuid()) {
    return "refusing checkpoint directory " + dir + ": it belongs to uid " +
           std::to_string(st.st_uid) + ", not to you";
  }
  if (!writable) return "checkpoint directory " + dir + " is not writable by you";
  return "";
}

}  // namespace sp::spank
