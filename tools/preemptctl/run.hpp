// Runs a program without a shell and captures what it prints.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sp::tool {

struct RunResult {
  int status = -1;  // exit status, or -1 if it could not run or was killed
  std::string out;  // stdout
  std::string err;  // stderr
};

// Thread-safe: preemptctl pause runs several at once. The program reads preemptctl's stdin.
RunResult run(const std::vector<std::string>& argv);
// The same, with `input` on the program's stdin (then end of file). A program that exits
// without reading it all is no error here: its status says.
RunResult run(const std::vector<std::string>& argv, std::string_view input);

// The first non-blank line of a command's output, for one-line error messages.
std::string first_line(const std::string& s);

// A sacct --delimiter no job's text can hold: lib/story.hpp sacct_delimiter around a number
// drawn now (std::random_device).
std::string fresh_sacct_delimiter();

}  // namespace sp::tool
