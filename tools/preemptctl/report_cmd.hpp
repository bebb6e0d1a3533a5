// preemptctl report [--since T] [--until T] [--account A] [--user U] [--format F]
// [--plot FILE.svg|FILE.png]: preemptions and what they cost, per project and per user, over
// slurmdbd's records of a time range. This file only runs sacct (and sacctmgr to check
// --account) and the plotter (tools/preemptctl/preempt-plot, matplotlib, given
// format_plot_json's document on stdin); lib/report.hpp counts, formats and decides what the
// picture shows.
#pragma once

namespace sp::tool {

// argv after the command word. 0 when the report was printed (and with --plot, FILE written);
// 1 when there is nothing to report (no jobs in the range, an unknown account), slurmdbd does
// not answer or the picture cannot be drawn (matplotlib missing), with one line on stderr and
// nothing on stdout; 2 for a bad argument (a --plot FILE that is no .svg or .png, or cannot
// be written: checked before sacct runs). FILE is written whole or not at all. Never throws.
int report_command(int argc, char** argv);

}  // namespace sp::tool
