// Where the plugins keep a job's story (the "slurm-preempt: ...;" notes): one of the three
// free-text fields of a Slurm job, chosen by preempt.yaml's story.field (policy.hpp). The
// notes are appended to whatever else the field holds (Princeton's jobstats writes its JSON
// summary into AdminComment, for one) and only they are read back. Pure text: part of
// lib/libspnode.la.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sp {

// What starts each of the plugins' notes in the story ("slurm-preempt: NOTE;").
inline constexpr std::string_view kNoteMark = "slurm-preempt:";

enum class StoryField {
  AdminComment,   // operators only; slurmdbd keeps it at every run's end (the default)
  SystemComment,  // slurmctld's; Slurm 22.05's slurmctld never sends it to slurmdbd
  Comment,        // the job owner's --comment: users can write it; slurmdbd keeps it only
                  // with AccountingStoreFlags=job_comment
};

// "admin_comment", "system_comment", "comment": the policy's words.
std::string_view story_field_key(StoryField f);
std::optional<StoryField> parse_story_field_key(std::string_view key);
// "AdminComment", "SystemComment", "Comment": sacct's column and scontrol's key.
std::string_view story_field_column(StoryField f);

// A sacct --format whose last column is the story (lib/story.hpp's kSacctFormat and
// kReportSacctFormat end with AdminComment), with that column for `f`.
std::string sacct_format_for(std::string_view format, StoryField f);

// Why the accounting would not keep the story in `f` (one clause, for "cannot load policy:
// FILE: ..."), empty when it would. `comment_stored`: slurm.conf's AccountingStoreFlags has
// job_comment.
std::string story_field_problem(StoryField f, bool comment_stored);

// The value of field `f` in `scontrol show job` text (the multi-line form, each optional
// comment field on a line of its own, or the one-line -o form: " Key=value" up to the next
// comment field or " StdErr="/" StdIn="/" StdOut="/" Power=" ...); empty when absent.
std::string shown_story_field(std::string_view show_job_text, StoryField f);

// With the story in Comment, the job's owner can write the field the plugins read back
// (sbatch --comment, scontrol update Comment=): what a user who is not an operator may not put
// there. A "slurm-preempt:" note of their own would be read as the plugins' (a refund of lost
// work, a pause, a preemption in preemptctl report); a line break starts a new row in the sacct
// output report reads; an update of a Comment that holds the plugins' notes would erase them.
// `current`: the job's Comment before the update (empty at submission). Returns "" when
// allowed, else one line saying why and what to do. With the story elsewhere: always "".
std::string comment_refusal(StoryField f, std::string_view comment, std::string_view current);

}  // namespace sp
