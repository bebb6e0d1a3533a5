// The node side's half of the promise codec: checkpoint_from_environment() reads back exactly
// what checkpoint_environment() gave the job, and nothing malformed or out of bounds.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "checkpoint.hpp"

namespace sp {
namespace {

using Env = std::map<std::string, std::string, std::less<>>;

std::optional<JobCheckpoint> read_back(const Env& env,
                                       std::string_view dir_env = "SLURM_CHECKPOINT_DIR") {
  return checkpoint_from_environment(
      [&](std::string_view name) {
        const auto it = env.find(name);
        return it == env.end() ? std::string_view() : std::string_view(it->second);
      },
      dir_env);
}

Env environment_of(const JobCheckpoint& c, const CheckpointPolicy& p) {
  Env env;
  for (auto& [k, v] : checkpoint_environment(c, p)) env[k] = v;
  return env;
}

TEST(CheckpointEnvironment, RoundTrips) {
  CheckpointPolicy p;
  JobCheckpoint c;
  c.signal = 12;
  c.grace_s = 90;
  c.lead_s = 45;
  c.requeue = true;
  c.gpu_steps_only = false;
  c.dir = "/home/alice/ckpt,run 1";
  EXPECT_EQ(read_back(environment_of(c, p)), c);
  c.gpu_steps_only = true;
  c.dir.clear();
  c.requeue = false;
  EXPECT_EQ(read_back(environment_of(c, p)), c);
}

TEST(CheckpointEnvironment, ARenamedDirVariableFallsBackToTheNoticesDirectory) {
  CheckpointPolicy p;
  p.dir_env = "MY_CKPT";
  JobCheckpoint c;
  c.signal = 10;
  c.grace_s = 30;
  c.lead_s = 30;
  c.dir = "/scratch/bob";
  EXPECT_EQ(read_back(environment_of(c, p), "MY_CKPT"), c);
  EXPECT_EQ(read_back(environment_of(c, p))->dir, "/scratch/bob");  // from the notice path
}

TEST(CheckpointEnvironment, NoSignalNoPromise) { EXPECT_FALSE(read_back({})); }

TEST(CheckpointEnvironment, RefusesWhatJobSubmitNeverWrites) {
  const Env good = {{"SLURM_CHECKPOINT_SIGNAL", "USR1"}, {"SLURM_CHECKPOINT_GRACE", "60"}};
  ASSERT_TRUE(read_back(good));
  const std::pair<const char*, const char*> bad[] = {
      {"SLURM_CHECKPOINT_SIGNAL", "KILL"}, {"SLURM_CHECKPOINT_SIGNAL", "STOP"},
      {"SLURM_CHECKPOINT_SIGNAL", "61"},   {"SLURM_CHECKPOINT_SIGNAL", "200"},
      {"SLURM_CHECKPOINT_SIGNAL", "NOPE"}, {"SLURM_CHECKPOINT_GRACE", "-1"},
      {"SLURM_CHECKPOINT_GRACE", "86401"}, {"SLURM_CHECKPOINT_GRACE", "99999999999999999999"},
      {"SLURM_CHECKPOINT_GRACE", "6O"},    {"SLURM_CHECKPOINT_LEAD", "1e9"},
      {"SLURM_CHECKPOINT_REQUEUE", "yes"}, {"SLURM_CHECKPOINT_STEPS", "some"},
  };
  for (const auto& [name, value] : bad) {
    Env env = good;
    env[name] = value;
    EXPECT_FALSE(read_back(env)) << name << "=" << value;
  }
}

TEST(CheckpointEnvironment, AnInvalidDirectoryIsDroppedNotTrusted) {
  Env env = {{"SLURM_CHECKPOINT_SIGNAL", "USR1"}, {"SLURM_CHECKPOINT_DIR", "/a/../../etc"}};
  ASSERT_TRUE(read_back(env));
  EXPECT_EQ(read_back(env)->dir, "");
  env["SLURM_CHECKPOINT_DIR"] = "relative/dir";
  EXPECT_EQ(read_back(env)->dir, "");
}

}  // namespace
}  // namespace sp
