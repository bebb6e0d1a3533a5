// lib/refund.hpp (lost work does not cost fair share) and lib/preemption.hpp's reasons: which
// run's usage is given back, the note that says so, and why a job was preempted.
#include "refund.hpp"

#include <gtest/gtest.h>

#include <string>

#include "checkpoint.hpp"
#include "pause_mark.hpp"
#include "policy_loader.hpp"
#include "preemption.hpp"
#include "story.hpp"
#include "test_support.hpp"

namespace sp {
namespace {

using test::ours;
using test::usr1;

constexpr int64_t kStart = 1795520340;  // the run's start

std::string preempted(int64_t at) {
  return ours(note_preempted(at, 9, "owner", "chem", usr1(5), "owner reclaim"));
}

TEST(RefundFraction, ARunKilledAtItsPreemptionGraceEndIsRefundedButTheCharge) {
  const std::string story =
      preempted(kStart + 60) + " " + ours(note_killed_at_grace_end(kStart + 65, true, 1));
  EXPECT_DOUBLE_EQ(refund_fraction(story, kStart, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(refund_fraction(story, kStart, 0.25), 0.75);
  EXPECT_DOUBLE_EQ(refund_fraction(story, kStart, 1.0), 0.0);
  // cancelled (no --requeue): the work is lost all the same
  const std::string cancelled =
      preempted(kStart + 60) + " " + ours(note_killed_at_grace_end(kStart + 65, false, 0));
  EXPECT_DOUBLE_EQ(refund_fraction(cancelled, kStart, 0.0), 1.0);
}

TEST(RefundFraction, ASavedRunATimeLimitAndNoNotesAreChargedInFull) {
  EXPECT_EQ(refund_fraction("", kStart, 0.0), 0.0);
  EXPECT_EQ(refund_fraction("jobstats: {\"gpu\": 1}", kStart, 0.0), 0.0);
  const std::string saved =
      preempted(kStart + 60) + " " + ours(note_exited_in_grace(kStart + 62, 0, true, 1));
  EXPECT_EQ(refund_fraction(saved, kStart, 0.0), 0.0);
  // a kill at the grace end with no preemption noted in the run
  EXPECT_EQ(refund_fraction(ours(note_killed_at_grace_end(kStart + 65, true, 1)), kStart, 0.0),
            0.0);
}

TEST(RefundFraction, OnlyTheRunThatEndsAndOnlyOnce) {
  const std::string first =
      preempted(kStart - 100) + " " + ours(note_killed_at_grace_end(kStart - 95, true, 1));
  // the earlier run's kill is not this run's
  EXPECT_EQ(refund_fraction(first, kStart, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(refund_fraction(first, kStart - 200, 0.0), 1.0);
  const std::string refunded = first + " " + ours(note_refunded(kStart - 94, 1234, 0.0));
  EXPECT_EQ(refund_fraction(refunded, kStart - 200, 0.0), 0.0);
  // an unknown start never refunds
  EXPECT_EQ(refund_fraction(first, 0, 0.0), 0.0);
}

TEST(RefundFraction, ARunToldKilledAtItsGraceEndIsRefundedBeforeAnyNoteOfIt) {
  // preempt/quota's grace end says the run was killed (grace 0, or Slurm's own grace check);
  // the watcher has not noted it yet
  EXPECT_DOUBLE_EQ(refund_fraction("", kStart, 0.0, true), 1.0);
  EXPECT_DOUBLE_EQ(refund_fraction("jobstats: {\"gpu\": 1}", kStart, 0.25, true), 0.75);
  EXPECT_EQ(refund_fraction("", kStart, 1.0, true), 0.0);
  // an earlier run's refund does not count; this run's does
  const std::string earlier = ours(note_refunded(kStart - 10, 60, 0.0));
  EXPECT_DOUBLE_EQ(refund_fraction(earlier, kStart, 0.0, true), 1.0);
  const std::string given = ours(note_refunded(kStart + 30, 60, 0.0));
  EXPECT_EQ(refund_fraction(given, kStart, 0.0, true), 0.0);
  // a bad charge never refunds
  EXPECT_EQ(refund_fraction("", kStart, -0.5, true), 0.0);
}

TEST(KilledAtGraceEnd, AnEndAtOrAfterTheGraceEndIsAKillUnlessTheRunEndedByItself) {
  const int64_t grace_end = kStart + 60;
  EXPECT_TRUE(killed_at_grace_end(grace_end, grace_end, false));
  EXPECT_TRUE(killed_at_grace_end(grace_end, grace_end + 5, false));   // the check came late
  EXPECT_FALSE(killed_at_grace_end(grace_end, grace_end - 1, false));  // in its grace: its own
  EXPECT_FALSE(killed_at_grace_end(grace_end, grace_end + 5, true));   // it exited (saved)
  EXPECT_TRUE(killed_at_grace_end(kStart, kStart, false));  // grace 0: ends where it begins
  EXPECT_FALSE(killed_at_grace_end(0, grace_end, false));   // no grace end known
  EXPECT_FALSE(killed_at_grace_end(grace_end, 0, false));   // no end known
}

TEST(RefundFraction, APauseKilledAtItsGraceEndIsChargedAsItRan) {
  const std::string paused = ours(note_paused("alice", false, kStart + 60, 5)) + " " +
                             ours(note_killed_at_grace_end(kStart + 65, true, 1, true));
  EXPECT_EQ(refund_fraction(paused, kStart, 0.0), 0.0);
}

TEST(NoteRefunded, ReadsBackWithItsFields) {
  for (const double charge : {0.0, 0.25, 1.0 / 3.0}) {
    const std::string text = note_refunded(kStart, 3600, charge);
    const auto notes = parse_story_notes(ours(text));
    ASSERT_EQ(notes.size(), 1U) << text;
    EXPECT_EQ(notes[0].kind, NoteKind::Refunded) << text;
    EXPECT_EQ(notes[0].at, kStart);
    EXPECT_EQ(notes[0].billing_s, 3600);
    EXPECT_EQ(notes[0].charge, charge);
  }
  EXPECT_EQ(note_refunded(kStart, 7, 0.25),
            "fair-share usage refunded at 2026-11-24T11:39:00Z: 7 billing-s of a run lost at its "
            "grace end (lost_work_charge 0.25)");
  const auto garbled = parse_story_notes(
      ours("fair-share usage refunded at 2026-11-24T11:39:00: x billing-s of a run lost at its "
           "grace end (lost_work_charge 0)"));
  ASSERT_EQ(garbled.size(), 1U);
  EXPECT_EQ(garbled[0].kind, NoteKind::Unparsed);
}

std::string_view reason(const Policy& p, std::string_view by_qos, std::string_view by_account,
                        std::string_view by_partition, std::string_view victim_qos,
                        std::string_view victim_account) {
  return preemption_reason(p, {by_qos, by_account, by_partition, victim_qos, victim_account});
}

TEST(PreemptionReason, OwnerReclaimQosAndUnknown) {
  const auto p = test::load_ok(
      "owners:\n  chem:\n    partitions: [chem]\n    nodes: n[3-4]\n"
      "qos:\n  standby: {preemptible: true}\n  normal: {preempts: [standby]}\n"
      "  owner: {preempts: [standby]}\n");
  EXPECT_EQ(reason(*p, "owner", "chem", "", "standby", "physics"), "owner reclaim");
  EXPECT_EQ(reason(*p, "OWNER", "Chem", "", "standby", "physics"), "owner reclaim");
  // in the group's partition, under whatever QOS
  EXPECT_EQ(reason(*p, "normal", "chem", "chem", "standby", "physics"), "owner reclaim");
  // an owner group's account outside its partitions under another QOS, and anyone else:
  // Slurm's QOS rules
  EXPECT_EQ(reason(*p, "normal", "chem", "public", "standby", "physics"), "qos");
  EXPECT_EQ(reason(*p, "normal", "physics", "chem", "standby", "physics"), "qos");
  EXPECT_EQ(reason(*p, "normal", "physics", "", "standby", "bio"), "qos");
  EXPECT_EQ(reason(*p, "", "", "", "standby", "bio"), "");
}

TEST(PreemptionReason, ClassInAProjectAndQuotaReclaim) {
  const auto p = test::load_ok("quotas:\n  team-a: {gpus: 2}\n  team-b: {gpus: 2}\n");
  EXPECT_EQ(reason(*p, "build", "team-a", "", "train", "team-a"), "class");
  EXPECT_EQ(reason(*p, "train", "team-a", "", "train", "team-b"), "quota reclaim");
  // a lower class of the same project is not a class preemption
  EXPECT_EQ(reason(*p, "train", "team-a", "", "build", "team-a"), "qos");
  // a preemptor without a quota
  EXPECT_EQ(reason(*p, "train", "physics", "", "train", "team-b"), "qos");
}

TEST(NotePreempted, TheReasonReadsBackAndOldNotesStillRead) {
  const auto n = parse_story_notes(preempted(kStart));
  ASSERT_EQ(n.size(), 1U);
  EXPECT_EQ(n[0].kind, NoteKind::Preempted);
  EXPECT_EQ(n[0].account, "chem");
  EXPECT_EQ(n[0].reason, "owner reclaim");
  const auto old = parse_story_notes(ours(note_preempted(kStart, 9, "owner", "chem", usr1(5))));
  ASSERT_EQ(old.size(), 1U);
  EXPECT_EQ(old[0].kind, NoteKind::Preempted);
  EXPECT_EQ(old[0].account, "chem");
  EXPECT_EQ(old[0].reason, "");
}

}  // namespace
}  // namespace sp
