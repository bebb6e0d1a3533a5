#include "run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <random>

#include "story.hpp"

extern char** environ;

namespace sp::tool {

std::string fresh_sacct_delimiter() {
  std::random_device rd;
  const uint64_t nonce = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return sacct_delimiter(nonce);
}

namespace {

RunResult run_with(const std::vector<std::string>& argv, const std::string_view* input) {
  RunResult r;
  std::array<int, 2> out{-1, -1};
  std::array<int, 2> err{-1, -1};
  // Close-on-exec: a child that another thread spawns meanwhile must not hold these pipes open
  // (posix_spawn's dup2 gives the child its own 1 and 2 without the flag).
  if (pipe2(out.data(), O_CLOEXEC) != 0 || pipe2(err.data(), O_CLOEXEC) != 0) {
    r.err = "cannot create a pipe";
    return r;
  }
  // The input goes through a socket, not a pipe: send(MSG_NOSIGNAL) to a program that exited
  // without reading fails with EPIPE instead of killing preemptctl with SIGPIPE.
  std::array<int, 2> in{-1, -1};
  if (input != nullptr && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in.data()) != 0) {
    for (const int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    r.err = "cannot create a socket";
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (input != nullptr) {
    posix_spawn_file_actions_adddup2(&fa, in[1], 0);
    posix_spawn_file_actions_addclose(&fa, in[0]);
  }
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  posix_spawn_file_actions_addclose(&fa, err[0]);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  close(err[1]);
  if (in[1] >= 0) close(in[1]);
  if (rc != 0) {
    close(out[0]);
    close(err[0]);
    if (in[0] >= 0) close(in[0]);
    r.err = "cannot run " + argv[0];
    return r;
  }
  std::string_view left = input != nullptr ? *input : std::string_view();
  if (in[0] >= 0 && left.empty()) {
    close(in[0]);
    in[0] = -1;
  }
  std::array<pollfd, 3> fds{{{out[0], POLLIN, 0}, {err[0], POLLIN, 0}, {in[0], POLLOUT, 0}}};
  std::array<std::string*, 2> sinks{&r.out, &r.err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0 || fds[2].fd >= 0) {
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[2].fd >= 0 && fds[2].revents != 0) {
      const ssize_t n = send(fds[2].fd, left.data(), left.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) left.remove_prefix(static_cast<std::size_t>(n));
      if (left.empty() || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        close(fds[2].fd);  // end of file for the program
        fds[2].fd = -1;
      }
    }
    for (std::size_t i = 0; i < sinks.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace

RunResult run(const std::vector<std::string>& argv) { return run_with(argv, nullptr); }

RunResult run(const std::vector<std::string>& argv, std::string_view input) {
  return run_with(argv, &input);
}

std::string first_line(const std::string& s) {
  const auto start = s.find_first_not_of(" \n");
  if (start == std::string::npos) return "";
  return s.substr(start, s.find('\n', start) - start);
}

}  // namespace sp::tool
