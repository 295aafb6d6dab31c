// An Inductor kernel through tuning's front door, on CPU: tests/fixtures/inductor/fake_serve.py
// plays `python3 -m ktune.inductor serve` (as KTUNE_PYTHON), so the session, its space, isolation
// and the winner's cache entry are the real ones.
#include "ktune/tune/inductor_kernel.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "ktune/core/error.hpp"
#include "ktune/tune/run.hpp"

namespace ktune::tune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFixtures = fs::path(KTUNE_SOURCE_DIR) / "tests/fixtures/inductor";
const fs::path kKernel =
    kFixtures / "cache/gw/cgway5ukqstzmc4jjvdzxrx72ttqrbr35xog6lsf2z45mhoqvvjb.py";

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / fmt::format("ktune-inductor-{}-{}", name, ::getpid());
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// KTUNE_PYTHON names the fake for the test's duration.
struct FakePython {
  FakePython() { ::setenv("KTUNE_PYTHON", (kFixtures / "fake_serve.py").c_str(), 1); }
  ~FakePython() { ::unsetenv("KTUNE_PYTHON"); }
};

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "\n";
}

TEST(InductorKernel, ThePythonPackageIsFoundInABuildTreeAndInAWheel) {
  TempDir t("layout");
  touch(t.path / "build/python/ktune/__init__.py");  // build/src/cli/ktune
  EXPECT_EQ(ktune_python_path(t.path / "build/src/cli/ktune"), t.path / "build/python");
  touch(t.path / "site/ktune/__init__.py");  // site-packages/ktune/bin/ktune
  EXPECT_EQ(ktune_python_path(t.path / "site/ktune/bin/ktune"), t.path / "site");
  EXPECT_EQ(ktune_python_path(t.path / "usr/bin/ktune"), std::nullopt);  // no package: none

  ::setenv("KTUNE_PYTHON", "/opt/py/bin/python3.12", 1);
  const ChildProgram p = ktune_inductor_program({"serve", "k.py"});
  ::unsetenv("KTUNE_PYTHON");
  EXPECT_EQ(p.argv, (std::vector<std::string>{"/opt/py/bin/python3.12", "-m", "ktune.inductor",
                                              "serve", "k.py"}));
  EXPECT_EQ(ktune_inductor_program({"scan", "d"}, "python3.11").argv.front(), "python3.11");
  EXPECT_EQ(ktune_inductor_program({"scan", "d"}).argv.front(), "python3");
}

json description() {
  return json::parse(R"({"schema_version": 1, "name": "triton_red_fused_sum_0",
    "kind": "reduction", "lookup_hash": ")" +
                     std::string(64, 'a') + R"(", "source_hash": "cd", "dtype": "bf16",
    "torch": "2.11.0+cu130", "triton": "3.6.0", "timing": "events",
    "numels": {"r0_numel": 128, "xnumel": 32768},
    "parameters": ["XBLOCK", "R0_BLOCK", "num_warps", "num_stages"],
    "configs": [[64, 64, 16, 1], [1, 128, 4, 1], [64, 64, 16, 2]],
    "inductor": [1, 0], "default": 0})");
}

TEST(InductorKernel, TheDescriptionBecomesTheSessionsSpaceWithInductorsChoiceFirst) {
  const InductorDescription d = inductor_description(description());
  ASSERT_EQ(d.numels.size(), 2u);
  EXPECT_EQ(d.numels[0].first, "xnumel");  // xnumel before r0_numel, whatever the JSON order
  EXPECT_EQ(d.numels[1].first, "r0_numel");
  const InductorSpace space(d);
  EXPECT_EQ(space.index().size(), 3u);
  ASSERT_EQ(space.first().size(), 2u);  // the default, then Inductor's other candidate
  const SearchTarget t = inductor_target(d, space);
  EXPECT_EQ(t.op, "inductor:" + std::string(64, 'a'));
  const auto first = space.index().space().to_json(space.index().at(t.first[0]));
  EXPECT_EQ(first, json::parse(R"({"XBLOCK": 64, "R0_BLOCK": 64, "num_warps": 16,
                                   "num_stages": 1})"));
  EXPECT_EQ(inductor_config(d, 1).at("R0_BLOCK"), Value(128));
}

TEST(InductorKernel, AMalformedDescriptionIsOneSentenceNamingTheField) {
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, json>>{{"lookup_hash", "xyz"},
                                                 {"schema_version", 2},
                                                 {"configs", json::parse("[[1, 2]]")},
                                                 {"default", 9},
                                                 {"name", 3}}) {
    json d = description();
    d[field] = value;
    try {
      inductor_description(d);
      ADD_FAILURE() << field << " was accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("description of the Inductor kernel is malformed"), std::string::npos)
          << what;
    }
  }
}

Job fake_job(const fs::path& out, InductorKernel kernel = {kKernel}) {
  Job job;
  job.target = std::move(kernel);
  job.session.out_dir = out;
  job.session.budget = 100;
  job.session.prefetch = 4;
  job.isolation.candidate_timeout_s = 10;
  job.environment = [] { return store::Environment{"sm_90", "NVIDIA H200", "13.0", 580}; };
  job.host.hostname = "test-host";
  return job;
}

TEST(InductorKernel, TheSessionFindsTheWinnerAndFilesItForInductorsLookupTable) {
  FakePython python;
  TempDir out("session");
  InductorKernel k{kKernel};
  k.ops = {"aten.select", "aten.clone"};
  const Outcome o = run(fake_job(out.path, k));
  ASSERT_TRUE(o.inductor);
  EXPECT_EQ(o.inductor->name, "triton_poi_fused__unsafe_view_clone_permute_select_view_1");
  EXPECT_EQ(o.session.evaluations, 20u);  // the whole space: 5 XBLOCK x 4 num_warps
  EXPECT_EQ(o.session.counts.at(Status::launch_failed), 5u);  // num_warps 32 crashes the child
  EXPECT_EQ(o.restarts, 5u);
  ASSERT_TRUE(o.winner);
  const store::CacheEntry& e = *o.winner;
  // The fake's stand-in lookup hash: the module's sha256.
  EXPECT_EQ(e.key.op, "inductor:70b7846e515d04d8e45c2950d63035626f4afdbcb46a038ea11348b0fb0d4c1c");
  EXPECT_EQ(e.key.dtype, "bf16");
  EXPECT_EQ(e.key.toolkit, "13.0+triton-3.6.0+torch-2.11.0+cu130");
  EXPECT_EQ(e.shape, (std::vector<std::int64_t>{262144}));
  EXPECT_EQ(e.config, json::parse(R"({"XBLOCK": 256, "num_warps": 4, "num_stages": 1})"));
  EXPECT_EQ(e.median_ns, 1000);
  EXPECT_EQ(e.provenance.budget.at("kernel"), o.inductor->name);
  EXPECT_EQ(e.provenance.budget.at("ops"), json::parse(R"(["aten.select", "aten.clone"])"));
  ASSERT_TRUE(o.default_ns);
  EXPECT_EQ(*o.default_ns, 1000 + (1024 - 256));  // Inductor's choice: XBLOCK 1024, 4 warps
  EXPECT_FALSE(o.default_won);
  EXPECT_EQ(o.session.records.front().config, inductor_config(*o.inductor, 17));  // its choice
}

TEST(InductorKernel, AKernelOfOtherPyTorchOrTritonVersionsIsRefusedWithOneSentence) {
  FakePython python;
  TempDir out("versions");
  InductorKernel k{kKernel};
  k.torch = "2.10.0+cu128";
  k.triton = "3.5.0";
  try {
    run(fake_job(out.path, k));
    FAIL() << "expected InductorVersionMismatch";
  } catch (const InductorVersionMismatch& e) {
    EXPECT_NE(std::string(e.what()).find("generated by PyTorch 2.10.0+cu128 and Triton 3.5.0, "
                                         "and this machine's Python has PyTorch 2.11.0+cu130"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(out.path / "results.jsonl"));  // nothing was measured
}

}  // namespace
}  // namespace ktune::tune
