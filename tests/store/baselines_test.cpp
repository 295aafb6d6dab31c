#include "ktune/store/baselines.hpp"

#include <gtest/gtest.h>

#include "ktune/core/error.hpp"
#include "store_fixture.hpp"

namespace ktune::store {
namespace {

using test::StoreTest;

GateRun make_run(const std::string& id, const std::string& session, const std::string& bench,
                 const std::string& at, std::vector<double> samples) {
  GateRun g;
  g.run_id = id;
  g.session_id = session;
  g.suite = "ci.toml";
  g.benchmark = bench;
  g.shape = "n=4096";
  g.env = {"NVIDIA H100 80GB HBM3", "sm_90", "580.65.06", "12.8", "0.1.0+abc"};
  g.code_commit = "deadbeef01";
  g.label = "main";
  g.config = {{"BLOCK", 256}};
  g.recorded_at = at;
  g.sm_clock_mhz = 1980;
  g.samples_ns = std::move(samples);
  return g;
}

class BaselinesTest : public StoreTest {};

TEST_P(BaselinesTest, KeepsEverySampleAndFindsTheNewestSession) {
  auto store = Store::open(url());
  Baselines b(*store);
  b.put_runs({make_run("r1", "s1", "gemv", "2026-11-20T10:00:00Z", {3, 1, 2}),
              make_run("r2", "s1", "gemv", "2026-11-20T10:00:01Z", {4, 5, 6}),
              make_run("r3", "s1", "copy", "2026-11-20T10:00:02Z", {7})});
  GateRun newer = make_run("r4", "s2", "gemv", "2026-11-21T10:00:00Z", {1.5, 2.5});
  newer.code_commit = "cafe0002";
  newer.label = "";
  newer.env.toolkit = "13.0";
  b.put_runs({newer});

  const auto all = b.runs({.benchmark = "gemv"});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].samples_ns, (std::vector<double>{3, 1, 2}));  // measuring order kept
  EXPECT_DOUBLE_EQ(all[0].p50_ns, 2);
  EXPECT_EQ(all[0].env.device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(all[0].config["BLOCK"], 256);
  EXPECT_EQ(all[2].env.toolkit, "13.0");

  const auto latest = b.latest_session({.benchmark = "gemv", .arch = "sm_90"});
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest[0].run_id, "r4");
  // A reference picks a label or a commit prefix.
  EXPECT_EQ(b.latest_session({.benchmark = "gemv", .ref = "main"}).size(), 2u);
  EXPECT_EQ(b.latest_session({.benchmark = "gemv", .ref = "deadbe"}).size(), 2u);
  EXPECT_EQ(b.latest_session({.benchmark = "gemv", .ref = "cafe"}).size(), 1u);
  EXPECT_TRUE(b.latest_session({.benchmark = "gemv", .ref = "nope"}).empty());
  const auto light = b.runs({.benchmark = "copy", .with_samples = false});
  ASSERT_EQ(light.size(), 1u);
  EXPECT_TRUE(light[0].samples_ns.empty());
  EXPECT_DOUBLE_EQ(light[0].p50_ns, 7);
  EXPECT_EQ(b.benchmarks().size(), 2u);
}

TEST_P(BaselinesTest, ABadRunStoresNothing) {
  auto store = Store::open(url());
  Baselines b(*store);
  EXPECT_THROW(
      b.put_runs({make_run("r1", "s1", "gemv", "t", {1}), make_run("r2", "s1", "gemv", "t", {})}),
      Error);
  // A duplicate run id fails in the database: the transaction rolls back whole.
  b.put_runs({make_run("r1", "s1", "gemv", "t", {1})});
  EXPECT_ANY_THROW(
      b.put_runs({make_run("r5", "s2", "gemv", "u", {1}), make_run("r1", "s2", "gemv", "u", {1})}));
  EXPECT_EQ(b.runs({}).size(), 1u);
}

KTUNE_BOTH_BACKENDS(BaselinesTest);

}  // namespace
}  // namespace ktune::store
