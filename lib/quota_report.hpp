// `preemptctl quotas`: the squeue listing it reads, and the table it prints. Pure: the tool
// runs squeue and feeds its output in.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "quota.hpp"

namespace sp {

// squeue -h -a -t RUNNING,PENDING -O <squeue_quota_format()>: JobID, Account, Partition, QOS,
// State, tres-alloc (GPUs allocated when running, requested when pending: gres/gpu=N for the
// whole job) and StartTime, each ending with '|'.
std::string squeue_quota_format();

// Parses that output; lines that do not parse, and jobs neither running nor pending, are
// skipped. StartTime (local time, "N/A" when unknown) becomes seconds since the epoch, 0 when
// unknown.
std::vector<ListedJob> parse_squeue_quota(std::string_view text);

// --parsable: the header "project|pool|quota|limit|used|nonpreemptible|borrowed|pending", then
// one line per project; a project without a limit shows "-".
std::string format_quota_parsable(const std::vector<QuotaLine>& lines);
// The same as an aligned table for people.
std::string format_quota_table(const std::vector<QuotaLine>& lines);

}  // namespace sp
