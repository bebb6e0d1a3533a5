// Runs a program without a shell and captures what it prints.
#pragma once

#include <string>
#include <vector>

namespace sp::tool {

struct RunResult {
  int status = -1;  // exit status, or -1 if it could not run or was killed
  std::string out;  // stdout
  std::string err;  // stderr
};

// Thread-safe: preemptctl pause runs several at once.
RunResult run(const std::vector<std::string>& argv);

// The first non-blank line of a command's output, for one-line error messages.
std::string first_line(const std::string& s);

}  // namespace sp::tool
