// libFuzzer target: every reader of the text a job's story lives in, fed any bytes. The story
// field may be the job's Comment (story.field: comment), which its owner writes as they like,
// and preemptctl reads sacct rows and `scontrol show job` output that carry it: none of these
// may crash, throw, read out of bounds or allocate without bound on such text.
// Properties: no crash/UB/exception; a pause mark's name is a part of the text; the refund is a
// fraction; every story read here fits in a bound that grows with the text, not with numbers in it.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "pause.hpp"
#include "pause_mark.hpp"
#include "refund.hpp"
#include "story.hpp"
#include "story_field.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const sp::PauseMark m = sp::last_pause_mark(text);
    SP_FUZZ_CHECK(m.who.size() <= text.size());
    SP_FUZZ_CHECK(sp::last_pause_note(text).size() <= text.size());
    (void)sp::last_finished_at(text);
    (void)sp::parse_note_preempted(text);
    (void)sp::shown_pause(text);
    (void)sp::decode_pause_request(text);
    SP_FUZZ_CHECK(sp::parse_story_notes(text).size() <= text.size() + 1);
    for (const bool told : {false, true}) {
      const double f = sp::refund_fraction(text, 0, 0.25, told);
      SP_FUZZ_CHECK(f >= 0.0 && f <= 1.0);
    }
    for (const auto field :
         {sp::StoryField::AdminComment, sp::StoryField::SystemComment, sp::StoryField::Comment}) {
      SP_FUZZ_CHECK(sp::shown_story_field(text, field).size() <= text.size());
    }
    // preemptctl events: sacct's rows of one job and slurmctld's view of it, merged into the
    // story it prints; preemptctl report: every job's rows.
    const std::vector<sp::JobRun> runs = sp::parse_sacct_runs(text, "1");
    const std::optional<sp::ShownJob> shown = sp::parse_shown_job(text);
    for (const auto& r : {runs, std::vector<sp::JobRun>{}}) {
      const auto story = sp::job_story(r, shown, {{1, "u"}});
      SP_FUZZ_CHECK(story.size() <= 64 * (text.size() + 1));
      (void)sp::format_story_table(story);
      (void)sp::format_story_json("1", story);
      (void)sp::preemptors_named(r, shown);
    }
    SP_FUZZ_CHECK(sp::parse_sacct_all(text).size() <= text.size() + 1);
    const std::string delim = sp::sacct_delimiter(size);
    SP_FUZZ_CHECK(sp::parse_sacct_all(text, delim).size() <= text.size() + 1);
    (void)sp::parse_sacct_runs(text, "1", delim);
    // What job_submit lets a user put in a Comment holds nothing any reader takes for a note.
    if (sp::comment_refusal(sp::StoryField::Comment, text, "").empty()) {
      SP_FUZZ_CHECK(sp::parse_story_notes(text).empty());
      SP_FUZZ_CHECK(sp::refund_fraction(text, 0, 0.0, false) == 0.0);
      const sp::PauseMark allowed = sp::last_pause_mark(text);
      SP_FUZZ_CHECK(!allowed.paused && allowed.at == 0);
      SP_FUZZ_CHECK(sp::last_finished_at(text) == 0);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception: %s\n", e.what());
    SP_FUZZ_CHECK(!"an exception left a story reader");
  }
  return 0;
}
