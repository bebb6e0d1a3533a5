// The one place that knows which field of a Slurm job holds the story (preempt.yaml's
// story.field, lib/story_field.hpp): every plugin reads and writes the notes through it, and
// never touches AdminComment, SystemComment or Comment otherwise. Writes only append: what
// others wrote in the field (jobstats' JSON, a user's --comment) stays as it was.
#pragma once

#include <string_view>

#include "story_field.hpp"

struct job_record;
typedef struct job_record job_record_t;
struct job_descriptor;
typedef struct job_descriptor job_desc_msg_t;

namespace sp {

// The chosen field of a job record (never null; *result may be).
char** story_slot(job_record_t& job, StoryField f);
// Its text, null when unset.
const char* story_text(const job_record_t& job, StoryField f);
// The field of a submission: null for SystemComment, which a job_desc_msg_t does not have.
char** story_slot(job_desc_msg_t& desc, StoryField f);

// Appends "slurm-preempt: NOTE;" to the field (after a space when it holds anything), with
// Slurm's allocator; never replaces or truncates what is there.
void add_story_note(job_record_t& job, StoryField f, std::string_view note);
// The same for a submission: `note` is appended as given (it carries its own prefix); false
// when the field cannot be written at submission (SystemComment).
bool add_story_text(job_desc_msg_t& desc, StoryField f, std::string_view note);

}  // namespace sp
