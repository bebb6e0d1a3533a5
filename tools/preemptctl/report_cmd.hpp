// preemptctl report [--since T] [--until T] [--account A] [--user U] [--format F]: preemptions
// and what they cost, per project and per user, over slurmdbd's records of a time range. This
// file only runs sacct (and sacctmgr to check --account); lib/report.hpp counts and formats.
#pragma once

namespace sp::tool {

// argv after the command word. 0 when the report was printed; 1 when there is nothing to
// report (no jobs in the range, an unknown account) or slurmdbd does not answer, with one line
// on stderr and nothing on stdout; 2 for a bad argument. Never throws.
int report_command(int argc, char** argv);

}  // namespace sp::tool
