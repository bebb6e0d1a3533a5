#include "story_field.hpp"

#include <array>

namespace sp {

std::string_view story_field_key(StoryField f) {
  switch (f) {
    case StoryField::SystemComment: return "system_comment";
    case StoryField::Comment: return "comment";
    case StoryField::AdminComment: break;
  }
  return "admin_comment";
}

std::optional<StoryField> parse_story_field_key(std::string_view key) {
  for (const StoryField f :
       {StoryField::AdminComment, StoryField::SystemComment, StoryField::Comment}) {
    if (key == story_field_key(f)) return f;
  }
  return std::nullopt;
}

std::string_view story_field_column(StoryField f) {
  switch (f) {
    case StoryField::SystemComment: return "SystemComment";
    case StoryField::Comment: return "Comment";
    case StoryField::AdminComment: break;
  }
  return "AdminComment";
}

std::string sacct_format_for(std::string_view format, StoryField f) {
  const std::size_t comma = format.rfind(',');
  const std::string_view head = comma == std::string_view::npos ? "" : format.substr(0, comma + 1);
  return std::string(head) + std::string(story_field_column(f));
}

std::string story_field_problem(StoryField f, bool comment_stored) {
  if (f == StoryField::SystemComment) {
    // src/plugins/accounting_storage/slurmdbd: jobacct_storage_p_job_complete fills
    // admin_comment and (with job_comment) comment, never system_comment.
    return "story.field system_comment: Slurm 22.05's slurmctld never sends a job's "
           "SystemComment to slurmdbd, so sacct, preemptctl events and preemptctl report would "
           "not see the story once a run ends; use admin_comment, or comment with "
           "AccountingStoreFlags=job_comment";
  }
  if (f == StoryField::Comment && !comment_stored) {
    return "story.field comment: slurmdbd keeps a job's Comment only with "
           "AccountingStoreFlags=job_comment in slurm.conf; add it, or use admin_comment";
  }
  return {};
}

namespace {

std::string_view trim_right(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Whether `text` holds "slurm-preempt:" where a reader of the story could take it for a note:
// at the start, or after any blank (the story's parser trims spaces, tabs and line breaks
// around each ';'-separated segment) or a ';'. A superset of every reader's rule (story.cpp
// parse_story_notes, pause_mark.cpp find_note), so that what it allows holds no note; a quoted
// "slurm-preempt: ..." inside a JSON value is not one.
bool holds_a_note(std::string_view text) {
  for (auto at = text.find(kNoteMark); at != std::string_view::npos;
       at = text.find(kNoteMark, at + 1)) {
    if (at == 0) return true;
    const char before = text[at - 1];
    if (before == ';' || before == ' ' || (before >= '\t' && before <= '\r')) return true;
  }
  return false;
}

}  // namespace

std::string comment_refusal(StoryField f, std::string_view comment, std::string_view current) {
  if (f != StoryField::Comment) return "";
  const std::string_view kWhy =
      "this cluster keeps slurm-preempt's notes on each job in its Comment (story.field: "
      "comment)";
  if (holds_a_note(current)) {
    return "the job's Comment holds its slurm-preempt notes, and " + std::string(kWhy) +
           ": an update would erase them; leave the comment as it is, or ask an administrator";
  }
  if (holds_a_note(comment)) {
    return "a comment may not hold a note of slurm-preempt's (\"slurm-preempt:\" after a blank, "
           "a ';' or at its start): " +
           std::string(kWhy) + ", which only slurm-preempt writes; reword the comment";
  }
  if (comment.find_first_of("\r\n") != std::string_view::npos) {
    return "a comment may not hold a line break: " + std::string(kWhy) +
           ", and sacct prints each job on one line; put the comment on one line";
  }
  return "";
}

std::string shown_story_field(std::string_view text, StoryField f) {
  const std::string key = std::string(story_field_column(f)) + "=";
  // The multi-line form: the field is a line of its own (after the leading spaces). The
  // first line (JobId= JobName=...) is never taken: a job name cannot forge the field.
  bool first = true;
  const bool multi_line = text.find("\n ") != std::string_view::npos;
  for (std::string_view rest = text; !rest.empty();) {
    const auto nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    const bool was_first = first;
    first = false;
    if (was_first) continue;
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line.starts_with(key)) return std::string(trim_right(line.substr(key.size())));
  }
  if (multi_line) return {};
  // The one-line form (scontrol -o): the comment fields come after WorkDir, in the order
  // AdminComment, SystemComment, Comment, each up to the next field Slurm prints after it.
  const auto work_dir = text.find(" WorkDir=");
  if (work_dir == std::string_view::npos) return {};
  const auto at = text.find(" " + key, work_dir);
  if (at == std::string_view::npos) return {};
  std::string_view v = text.substr(at + 1 + key.size());
  static constexpr std::array<std::string_view, 7> kNext = {
      " SystemComment=", " Comment=",     " StdErr=", " StdIn=",
      " Switches=",      " BurstBuffer=", " Power="};
  std::size_t end = v.size();
  for (const std::string_view next : kNext) {
    if (next.substr(1) == key) continue;
    if (const auto p = v.find(next); p != std::string_view::npos && p < end) end = p;
  }
  return std::string(trim_right(v.substr(0, end)));
}

}  // namespace sp
