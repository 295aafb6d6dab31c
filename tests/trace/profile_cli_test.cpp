// `ktune profile` as a user runs it. CPU tier: argument and command errors, exit-code passthrough,
// the environment handed to the traced command. GPU tier (skipped without one): tracing the
// tiny-kernel loop gives exactly the launched kernel count, nothing dropped; a program that dies
// or is interrupted leaves a readable trace.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ktune/cuda/driver.hpp"
#include "ktune/trace/ktrace.hpp"
#include "ktune/trace/metrics.hpp"
#include "ktune/trace/options.hpp"
#include "run_ktune.hpp"
#include "trace_test_util.hpp"

namespace ktune::trace {
namespace {

using ktune::test::run_ktune;

void expect_one_sentence(const std::string& err, const std::string& needle) {
  EXPECT_NE(err.find(needle), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << "one line: " << err;
  EXPECT_EQ(err.rfind(".\n"), err.size() - 2) << err;
}

TEST(ProfileCli, NeedsACommand) {
  const auto r = run_ktune("profile");
  EXPECT_EQ(r.exit_code, 2);
  expect_one_sentence(r.err, "no command to profile");
}

TEST(ProfileCli, UnknownCommandIsOneSentence) {
  const auto r = run_ktune("profile -- ktune-no-such-program-xyz --flag");
  EXPECT_EQ(r.exit_code, 1);
  expect_one_sentence(r.err, "'ktune-no-such-program-xyz' was not found on PATH");
  const auto r2 = run_ktune("profile -- /nonexistent/dir/prog");
  EXPECT_EQ(r2.exit_code, 1);
  expect_one_sentence(r2.err, "does not exist");
  // A name the file system refuses to look up (over 255 bytes) is the same sentence, not a crash.
  const auto too_long = run_ktune("profile -- /tmp/" + std::string(300, 'p'));
  EXPECT_EQ(too_long.exit_code, 1);
  expect_one_sentence(too_long.err, "does not exist");
  test::TempDir dir;
  std::ofstream(dir.path / "notes.txt") << "not a program\n";
  const auto r3 = run_ktune("profile -- " + (dir.path / "notes.txt").string());
  EXPECT_EQ(r3.exit_code, 1);
  expect_one_sentence(r3.err, "not an executable");
}

TEST(ProfileCli, BadRangeAndMissingTracerAreOneSentence) {
  const auto r = run_ktune("profile --range bogus -- true");
  EXPECT_EQ(r.exit_code, 2);
  expect_one_sentence(r.err, "capture range 'bogus'");
  const auto r2 = run_ktune("profile -- true", "KTUNE_TRACER=/nonexistent/libktune_tracer.so");
  EXPECT_EQ(r2.exit_code, 1);
  expect_one_sentence(r2.err, "KTUNE_TRACER=/nonexistent/libktune_tracer.so is not a file");
  const auto r3 = run_ktune("profile -- true", "KTUNE_TRACE_MODE=fast");
  EXPECT_EQ(r3.exit_code, 2);
  expect_one_sentence(r3.err, "KTUNE_TRACE_MODE='fast' is not a mode");
  const auto r4 = run_ktune("profile --full --kernels-only -- true");
  EXPECT_NE(r4.exit_code, 0);
  expect_one_sentence(r4.err, "excludes");
}

// The counter tier's flags are checked before the program starts, on any machine: bad values,
// from a flag or a variable, are usage errors (2).
TEST(ProfileCli, BadMetricsAndKernelRegexAreOneSentence) {
  const auto r = run_ktune("profile --metrics rooflin -- true");
  EXPECT_EQ(r.exit_code, 2);
  expect_one_sentence(r.err,
                      "'rooflin' is neither a metric set nor a metric name; use one of "
                      "triage, roofline, memory, stalls, compute, full");
  const auto r2 = run_ktune("profile --metrics roofline --kernel 'gemm(' -- true");
  EXPECT_EQ(r2.exit_code, 2);
  expect_one_sentence(r2.err, "--kernel 'gemm(' is not a valid regular expression");
  const auto r3 = run_ktune("profile -- true", "KTUNE_TRACE_METRICS=bogus");
  EXPECT_EQ(r3.exit_code, 2);
  const auto r4 = run_ktune("profile --metrics roofline --every 0 -- true");
  EXPECT_NE(r4.exit_code, 0);
}

// ktune bench --metrics checks its set before anything runs, and says what it cannot combine.
TEST(ProfileCli, BenchMetricsIsCheckedFirst) {
  const std::string spec = std::string(KTUNE_SOURCE_DIR) + "/kernels/copy/copy.json";
  const auto r = run_ktune("bench " + spec + " --metrics rooflin");
  EXPECT_EQ(r.exit_code, 2);
  expect_one_sentence(r.err, "'rooflin' is neither a metric set nor a metric name");
  const auto r2 = run_ktune("bench " + spec + " --metrics roofline --json");
  EXPECT_EQ(r2.exit_code, 2);
  expect_one_sentence(r2.err, "--metrics prints text for one configuration");
}

TEST(ProfileCli, ExitCodeIsTheCommands) {
  test::TempDir dir;
  const auto r = run_ktune("profile -o " + (dir.path / "t.ktrace").string() + " -- sh -c 'exit 7'");
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_NE(r.err.find("no trace written"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path / "t.ktrace"));
  const auto killed = run_ktune("profile -- sh -c 'kill -TERM $$'");
  EXPECT_EQ(killed.exit_code, 128 + 15);
}

// --ops puts the folder of ktune's sitecustomize.py first on the command's PYTHONPATH (the
// user's own entries after it) and says so to the hook; it needs NVTX, so not with --kernels-only.
TEST(ProfileCli, OpsPutsTheTorchHookFirstOnPythonPath) {
  test::TempDir dir;
  const auto r =
      run_ktune("profile --ops -o " + (dir.path / "o.ktrace").string() +
                    " -- sh -c 'echo PYTHONPATH=$PYTHONPATH; env | grep KTUNE_TRACE_OPS'",
                "PYTHONPATH=/users/own");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("PYTHONPATH=([^:\n]*):/users/own\n")))
      << r.out;
  EXPECT_TRUE(
      std::filesystem::is_regular_file(std::filesystem::path(m[1].str()) / "sitecustomize.py"))
      << m[1];
  EXPECT_NE(r.out.find("KTUNE_TRACE_OPS=1"), std::string::npos) << r.out;
  const auto without = run_ktune(
      "profile -o " + (dir.path / "p.ktrace").string() + " -- sh -c 'echo PYTHONPATH=$PYTHONPATH'",
      "PYTHONPATH=/users/own");
  EXPECT_NE(without.out.find("PYTHONPATH=/users/own\n"), std::string::npos) << without.out;
  const auto both = run_ktune("profile --ops --kernels-only -- true");
  EXPECT_EQ(both.exit_code, 2);  // settings that cannot work together: usage
  expect_one_sentence(both.err, "--ops needs NVTX records");
}

// A Python program gets Inductor's cache beside the trace, and its kernels are listed after it
// ends (tests/fixtures/inductor/fake_serve.py plays `python3 -m ktune.inductor scan`).
TEST(ProfileCli, APythonProgramsInductorCacheIsKeptAndScannedBesideTheTrace) {
  test::TempDir dir;
  const std::string fake =
      "KTUNE_PYTHON=" + std::string(KTUNE_SOURCE_DIR) + "/tests/fixtures/inductor/fake_serve.py";
  // The program compiles "a kernel": a module in the cache folder it was given.
  const std::string program =
      " -- python3 -c \"import os; d = os.environ['TORCHINDUCTOR_CACHE_DIR']; "
      "print('cache', d, os.environ['TORCHINDUCTOR_BENCHMARK_KERNEL']); "
      "os.makedirs(d + '/ab'); open(d + '/ab/cab.py', 'w').write('')\"";
  const auto r = run_ktune("profile -o " + (dir.path / "run.ktrace").string() + program, fake);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cache " + (dir.path / "inductor").string() + " 1\n"), std::string::npos)
      << r.out;
  const auto scan = nlohmann::json::parse(std::ifstream(dir.path / "run.inductor.json"));
  EXPECT_EQ(scan.at("kernels").size(), 4u);
  EXPECT_NE(r.err.find("Triton kernels listed in " + (dir.path / "run.inductor.json").string()),
            std::string::npos)
      << r.err;

  // The user's own settings stand; a scan that fails is a warning and the run's exit code stays.
  const auto mine = run_ktune(
      "profile -o " + (dir.path / "mine.ktrace").string() + program,
      fake + " FAKE_SCAN_MODE=fail TORCHINDUCTOR_CACHE_DIR=" + (dir.path / "mine").string() +
          " TORCHINDUCTOR_BENCHMARK_KERNEL=0");
  ASSERT_EQ(mine.exit_code, 0) << mine.err;
  EXPECT_NE(mine.out.find("cache " + (dir.path / "mine").string() + " 0\n"), std::string::npos)
      << mine.out;
  EXPECT_FALSE(std::filesystem::exists(dir.path / "mine.inductor.json"));
  EXPECT_NE(mine.err.find("ktune: warning: the Triton kernels in " + (dir.path / "mine").string() +
                          " were not listed ("),
            std::string::npos)
      << mine.err;
  EXPECT_NE(mine.err.find("torch is not installed for this Python."), std::string::npos)
      << mine.err;

  // Not a Python program: nothing of the kind.
  const auto shell = run_ktune("profile -o " + (dir.path / "sh.ktrace").string() +
                               " -- sh -c 'echo cache=$TORCHINDUCTOR_CACHE_DIR'");
  EXPECT_NE(shell.out.find("cache=\n"), std::string::npos) << shell.out;
}

TEST(ProfileCli, HandsOptionsToTheCommandThroughTheEnvironment) {
  test::TempDir dir;
  const auto r = run_ktune(
      "profile --kernels-only --delay 2.5 --range nvtx:step --sample 4 "
      "--job-id j1 --max-records 100 -o " +
      (dir.path / "x.ktrace").string() +
      " -- sh -c 'echo pid=$$; env | grep -E \"^(KTUNE_TRACE|CUDA_INJ)\" | "
      "sort'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("pid=(\\d+)")));
  EXPECT_NE(r.out.find("KTUNE_TRACE_ROOT_PID=" + m[1].str() + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KTUNE_TRACE_MODE=kernels\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KTUNE_TRACE_DELAY_S=2.5\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KTUNE_TRACE_RANGE=nvtx:step\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KTUNE_TRACE_SAMPLE=4\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KTUNE_TRACE_JOB_ID=j1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KTUNE_TRACE_MAX_RECORDS=100\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KTUNE_TRACE_OUTPUT=" + (dir.path / "x.ktrace").string() + "\n"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("CUDA_INJECTION64_PATH=/.*libktune_tracer\\.so")))
      << r.out;
  // Environment fallbacks feed the same options.
  const auto e =
      run_ktune("profile -- sh -c 'env | grep KTUNE_TRACE_MODE'", "KTUNE_TRACE_MODE=kernels");
  EXPECT_NE(e.out.find("KTUNE_TRACE_MODE=kernels"), std::string::npos) << e.out;
  // The record-kind switches reach the tracer only when they differ from its defaults.
  const auto k = run_ktune(
      "profile --driver-api 0 --memsets --sync-records --latency --overhead -o " +
      (dir.path / "k.ktrace").string() + " -- sh -c 'env | grep -E \"^KTUNE_TRACE_\" | sort'");
  ASSERT_EQ(k.exit_code, 0) << k.err;
  for (const char* line :
       {"KTUNE_TRACE_DRIVER_API=0\n", "KTUNE_TRACE_MEMSET=1\n", "KTUNE_TRACE_SYNC=1\n",
        "KTUNE_TRACE_LATENCY=1\n", "KTUNE_TRACE_OVERHEAD=1\n"})
    EXPECT_NE(k.out.find(line), std::string::npos) << line << k.out;
  // --full (or KTUNE_TRACE_MODE=full) turns every opt-in kind on.
  for (const auto& [args, env] :
       {std::pair<std::string, std::string>{"--full", ""}, {"", "KTUNE_TRACE_MODE=full"}}) {
    const auto f = run_ktune("profile " + args + " -o " + (dir.path / "f.ktrace").string() +
                                 " -- sh -c 'env | grep -E \"^KTUNE_TRACE_\" | sort'",
                             env);
    ASSERT_EQ(f.exit_code, 0) << f.err;
    for (const char* line : {"KTUNE_TRACE_MEMSET=1\n", "KTUNE_TRACE_SYNC=1\n",
                             "KTUNE_TRACE_LATENCY=1\n", "KTUNE_TRACE_OVERHEAD=1\n"})
      EXPECT_NE(f.out.find(line), std::string::npos) << args << env << line << f.out;
  }
  // A kind set off by its own variable stays off under --full.
  const auto g = run_ktune("profile --full -o " + (dir.path / "g.ktrace").string() +
                               " -- sh -c 'env | grep -E \"^KTUNE_TRACE_\" | sort'",
                           "KTUNE_TRACE_SYNC=0");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(g.out.find("KTUNE_TRACE_SYNC=1"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("KTUNE_TRACE_MEMSET=1"), std::string::npos) << g.out;
  const auto d = run_ktune("profile -o " + (dir.path / "d.ktrace").string() +
                           " -- sh -c 'env | grep -E \"^KTUNE_TRACE_(SYNC|DRIVER_API)\" || true'");
  EXPECT_EQ(d.out, "") << d.out;
}

TEST(ProfileCli, PeriodicWindowsReachTheTracerInSeconds) {
  test::TempDir dir;
  const auto r =
      run_ktune("profile --period 60s --window 2s -o " + (dir.path / "p.ktrace").string() +
                " -- sh -c 'env | grep -E \"^KTUNE_TRACE_(PERIOD|WINDOW)=\" | sort'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "KTUNE_TRACE_PERIOD=60\nKTUNE_TRACE_WINDOW=2\n");
  // The variables a fleet's launcher sets work as the flags do.
  const auto e = run_ktune("profile -o " + (dir.path / "e.ktrace").string() +
                               " -- sh -c 'env | grep -E \"^KTUNE_TRACE_(PERIOD|WINDOW)=\" | sort'",
                           "KTUNE_TRACE_PERIOD=1m KTUNE_TRACE_WINDOW=500ms");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(e.out, "KTUNE_TRACE_PERIOD=60\nKTUNE_TRACE_WINDOW=0.5\n");
}

// --ingest on the CPU: the command stands in for the tracer and leaves the traces a periodic run
// would (two windows of itself, one of a child process); each is pushed once, as a run of its own.
TEST(ProfileCli, IngestPushesEveryTraceTheRunLeft) {
  test::TempDir dir;
  for (std::uint64_t w : {0, 1}) {
    Trace t = test::sample_trace();
    t.metadata.window = {};
    t.metadata.window.period_s = 60;
    t.metadata.window.window_s = 2;
    t.metadata.window.index = w;
    write_ktrace(dir.path / ("made" + std::to_string(w) + ".ktrace"), t);
  }
  const auto out = dir.path / "p.ktrace";
  // Each trace appears whole (copied aside, then renamed), as the tracer's SQLite commits make
  // it appear to a reader: a half-copied file is no trace the tracer ever leaves.
  auto place = [&](const char* made, const std::filesystem::path& to) {
    const std::string from = (dir.path / made).string();
    return "cp " + from + " " + to.string() + ".part && mv " + to.string() + ".part " + to.string();
  };
  const std::string leave = place("made0.ktrace", trace_path(out, 0, 0, 0)) + " && " +
                            place("made1.ktrace", trace_path(out, 0, 0, 1)) + " && " +
                            place("made1.ktrace", trace_path(out, 1, 77, 1));
  const std::string cmd = "--db " + (dir.path / "fleet.db").string() +
                          " profile --ingest --tag build=b7 -o " + out.string() + " -- sh -c '" +
                          leave + "'";
  const auto r = run_ktune(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::size_t added = 0;
  for (std::size_t at = 0; (at = r.out.find(": added (", at)) != std::string::npos; ++at) ++added;
  EXPECT_EQ(added, 2u) << r.out;  // the child's window 1 is a copy of the root's: one run
  // Some may be filed while the command still runs (the watch's first look can come before it
  // ends on a loaded machine), the rest after it: three traces in all, whatever the split.
  std::size_t filed = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (const auto at = line.find(" trace");
        at != std::string::npos && line.find(" into ") != std::string::npos)
      filed += std::stoul(line.substr(0, at));
  EXPECT_EQ(filed, 3u) << r.out;
  const auto again = run_ktune(cmd);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out.find(": added ("), std::string::npos) << again.out;
  // A store that cannot be opened fails the run after the command, in one sentence.
  const auto bad = run_ktune("--db postgresql://nobody@127.0.0.1:1/none profile --ingest -o " +
                             out.string() + " -- sh -c '" + leave + "'");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("the traces were not ingested"), std::string::npos) << bad.err;
}

// The tracer hooks cuBLASLt's logger itself: ktune profile hands the program the flag and leaves
// cuBLASLt's own variables alone, with the flag as without it.
TEST(ProfileCli, GemmShapesIsTheTracersAndLeavesCuBlasLtsVariablesAlone) {
  test::TempDir dir;
  const std::string show =
      " -- sh -c 'echo \"[$KTUNE_TRACE_GEMM_SHAPES|$CUBLASLT_LOG_LEVEL|$CUBLASLT_LOG_FILE]\"'";
  const auto on = run_ktune("profile --gemm-shapes -o " + (dir.path / "a.ktrace").string() + show);
  ASSERT_EQ(on.exit_code, 0) << on.err;
  EXPECT_EQ(on.out, "[1||]\n");
  const auto env = run_ktune("profile -o " + (dir.path / "b.ktrace").string() + show,
                             "KTUNE_TRACE_GEMM_SHAPES=1");
  EXPECT_EQ(env.out, "[1||]\n");
  const auto off = run_ktune("profile -o " + (dir.path / "c.ktrace").string() + show);
  EXPECT_EQ(off.out, "[||]\n");
}

// --gemm-shapes records through the GEMM router, which it preloads; the user's own cuBLASLt logging
// is left alone (the logger fallback of a tracer without the router refuses to take it over).
TEST(ProfileCli, GemmShapesPreloadsTheRouterAndLeavesTheUsersLoggerAlone) {
  const auto r = run_ktune(
      "profile --gemm-shapes -o /tmp/ktune-gemm-shapes-cli.ktrace -- sh -c 'echo \"$LD_PRELOAD\"'",
      "CUBLASLT_LOG_FILE=/tmp/mine.log LD_PRELOAD=");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("libktune_route.so"), std::string::npos) << r.out;
  const auto off =
      run_ktune("profile -o /tmp/ktune-gemm-shapes-cli.ktrace -- sh -c 'echo \"[$LD_PRELOAD]\"'",
                "LD_PRELOAD=");
  EXPECT_EQ(off.out, "[]\n");
}

TEST(ProfileCli, BadPeriodicWindowsAreOneSentence) {
  const auto alone = run_ktune("profile --window 2s -- true");
  EXPECT_EQ(alone.exit_code, 2);
  expect_one_sentence(alone.err, "--window (KTUNE_TRACE_WINDOW) needs --period");
  const auto longer = run_ktune("profile --period 1s --window 2s -- true");
  EXPECT_EQ(longer.exit_code, 2);
  expect_one_sentence(longer.err, "must fit in its period");
  const auto both = run_ktune("profile --period 1s --window 0.1s --range profiler -- true");
  EXPECT_EQ(both.exit_code, 2);
  expect_one_sentence(both.err, "--range");
  const auto unit = run_ktune("profile --period 10x --window 1s -- true");
  EXPECT_EQ(unit.exit_code, 2);
  EXPECT_NE(unit.err.find("'10x' is not a duration"), std::string::npos) << unit.err;
}

// GPU tier: the lead's H100 run. Needs nvcc (the toolkit is on the GPU machine). Builds `source`
// (relative to the source tree) into `dir`; the path of the program, or "" when nvcc fails.
std::string build_cuda_program(const test::TempDir& dir, const char* source, const char* name) {
  const std::string exe = (dir.path / name).string();
  const std::string nvcc =
      std::filesystem::exists("/usr/local/cuda/bin/nvcc") ? "/usr/local/cuda/bin/nvcc" : "nvcc";
  const std::string cmd = nvcc + " -O2 -o " + exe + " " KTUNE_SOURCE_DIR "/" + source;
  return std::system(cmd.c_str()) == 0 ? exe : "";
}

// The cuBLASLt program, linked against cuBLASLt as applications are (loaded before cuInit).
std::string build_cublaslt_loop(const test::TempDir& dir) {
  const std::string exe = (dir.path / "cublaslt_loop").string();
  const std::string nvcc =
      std::filesystem::exists("/usr/local/cuda/bin/nvcc") ? "/usr/local/cuda/bin/nvcc" : "nvcc";
  const std::string cmd =
      nvcc + " -O2 -o " + exe + " " KTUNE_SOURCE_DIR "/tests/trace/cublaslt_loop.cu -lcublasLt";
  return std::system(cmd.c_str()) == 0 ? exe : "";
}

std::string build_tiny_loop(const test::TempDir& dir) {
  return build_cuda_program(dir, "benchmarks/tracer/tiny_loop.cu", "tiny_loop");
}

// Starts `command` with sh, SIGINT at its default action (a shell's background job would ignore
// it, and the traced program would inherit that), and returns its pid.
pid_t spawn(const std::string& command) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGINT, SIG_DFL);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// Waits (up to 60 s) until fault_loop has printed "flushed pid=N" into `log`; returns N, or 0.
pid_t wait_until_flushed(const std::filesystem::path& log) {
  for (int i = 0; i < 600; ++i) {
    std::ifstream in(log);
    std::string word;
    while (in >> word)
      if (word.rfind("pid=", 0) == 0) return static_cast<pid_t>(std::stol(word.substr(4)));
    ::usleep(100 * 1000);
  }
  return 0;
}

// fault_loop under ktune profile, with a short flush period so its kernels are committed before
// it ends; the log holds the program's and ktune's output.
std::string profile_fault_loop(const std::string& exe, const std::filesystem::path& out,
                               const char* how, const std::filesystem::path& log) {
  return "ulimit -c 0; KTUNE_TRACE_FLUSH_MS=100 exec " KTUNE_EXE " profile -o " + out.string() +
         " -- " + exe + " 1000 " + how + " >" + log.string() + " 2>&1";
}

// The counter tier on real launches: exactly the selected ones (skip 10, every 100th, 3 of them)
// get every roofline metric, joined to kernel records that sit on the timeline (CUPTI leaves a
// replayed kernel's timestamps 0), and every other launch is still recorded.
TEST(ProfileGpu, CountersForExactlyTheSelectedLaunches) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  test::TempDir dir;
  const std::string exe = build_tiny_loop(dir);
  ASSERT_FALSE(exe.empty());
  const auto out = dir.path / "c.ktrace";
  const auto r = run_ktune(
      "profile --metrics roofline --kernel tiny_add --launch-skip 10 --every "
      "100 --launch-count 3 -o " +
      out.string() + " -- " + exe + " 1000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("hardware counters: 3 launches of 1 kernels profiled"), std::string::npos)
      << r.err;
  const Trace t = read_ktrace(out);
  const std::size_t per_launch = metric::resolve_metrics("roofline").size();
  ASSERT_EQ(t.counters.size(), 3 * per_launch);
  std::set<std::uint32_t> launches;
  for (const auto& c : t.counters) launches.insert(c.correlation_id);
  EXPECT_EQ(launches.size(), 3u);
  std::size_t tiny = 0, profiled = 0;
  for (const auto& k : t.kernels) {
    if (k.demangled_name.find("tiny_add") == std::string::npos) continue;
    ++tiny;
    if (launches.count(k.correlation_id)) {
      ++profiled;
      EXPECT_GT(k.start_ns, 0u);
      EXPECT_GT(k.duration_ns(), 0u);
    }
  }
  EXPECT_EQ(tiny, 1100u);
  EXPECT_EQ(profiled, 3u);
  for (const auto& c : t.counters) {
    if (c.metric == metric::kDuration) {
      EXPECT_GT(c.value, 0) << c.correlation_id;
    }
  }
}

// --gemm-shapes on real cuBLASLt calls: every call is one event on the calling thread, every
// problem one record with its calls, and the analysis ties each call to the kernels it launched,
// so both problems have GPU time; the program's own output is untouched by cuBLASLt's logger.
TEST(ProfileGpu, GemmShapesRecordsEachCallAndItsKernels) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  test::TempDir dir;
  const std::string exe = build_cublaslt_loop(dir);
  ASSERT_FALSE(exe.empty());
  const auto out = dir.path / "g.ktrace";
  const auto r = run_ktune("profile --gemm-shapes -o " + out.string() + " -- " + exe + " 5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ran 6 GEMMs\n") << "cuBLASLt's log must not reach the program's stdout";
  const Trace t = read_ktrace(out);
  ASSERT_EQ(t.gemm_calls.size(), 2u);
  EXPECT_EQ(t.gemm_calls[0].calls, 5u);
  EXPECT_EQ(t.gemm_calls[0].transa, "OP_N");
  EXPECT_EQ(t.gemm_calls[1].calls, 1u);
  EXPECT_EQ(t.gemm_calls[1].epilogue, "EPILOGUE_BIAS");
  ASSERT_EQ(t.gemm_events.size(), 6u);
  const auto rep = run_ktune("report --format json " + out.string());
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const auto g = nlohmann::json::parse(rep.out)["gemm_calls"];
  EXPECT_EQ(g["timed"], true);
  EXPECT_EQ(g["timed_calls"], 6) << "every call tied to the kernel it launched";
  for (const auto& shape : g["shapes"]) EXPECT_GT(shape["gpu_ns"].get<double>(), 0) << shape;
  EXPECT_EQ(g["shapes"][0]["cache_key"]["op"], "gemm_nn");
}

// A tracer injected by hand with GEMM shapes on, in a program that logs cuBLASLt itself: the
// tracer says why it records no GEMM call and leaves the program's own log alone.
TEST(ProfileGpu, GemmShapesByHandLeaveTheProgramsOwnCuBlasLtLogAlone) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  test::TempDir dir;
  const std::string exe = build_cublaslt_loop(dir);
  ASSERT_FALSE(exe.empty());
  const auto out = dir.path / "h.ktrace", log = dir.path / "own.log";
  const auto r = run_ktune("profile -o " + out.string() +
                           " -- sh -c 'KTUNE_TRACE_GEMM_SHAPES=1 CUBLASLT_LOG_LEVEL=2 "
                           "CUBLASLT_LOG_FILE=" +
                           log.string() + " exec " + exe + " 2'");  // exec: CMD's own trace
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("CUBLASLT_LOG_LEVEL=2 configures it already"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No GEMM call is recorded."), std::string::npos) << r.err;
  EXPECT_GT(std::filesystem::file_size(log), 0u) << "the program's own cuBLASLt log was taken over";
  const Trace t = read_ktrace(out);
  EXPECT_TRUE(t.gemm_calls.empty());
  EXPECT_FALSE(t.kernels.empty());
}

// The writer drains the last API records at exit, after the function-local statics made since the
// tracer started are destroyed: its record decoder was one (a destroyed name map), and the bench
// of the copy kernel under --metrics crashed at exit in 1 of 3 runs on the H100, its trace cut
// short. Exiting right after thousands of API calls, several times: every run exits 0, complete.
TEST(ProfileGpu, ExitAfterManyApiCallsLeavesACompleteTraceEveryTime) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  test::TempDir dir;
  const std::string exe = build_tiny_loop(dir);
  ASSERT_FALSE(exe.empty());
  for (int i = 0; i < 5; ++i) {
    const auto out = dir.path / ("x" + std::to_string(i) + ".ktrace");
    const auto r = run_ktune("profile --metrics roofline --kernel tiny_add --launch-count 1 -o " +
                             out.string() + " -- " + exe + " 20000");
    ASSERT_EQ(r.exit_code, 0) << "run " << i << ": " << r.err;
    EXPECT_TRUE(read_ktrace(out).metadata.complete) << "run " << i;
  }
}

TEST(ProfileGpu, TinyLoopKernelCountIsExactAndNothingDropped) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  test::TempDir dir;
  const std::string exe = build_tiny_loop(dir);
  ASSERT_FALSE(exe.empty());
  for (const char* mode : {"", "--kernels-only"}) {
    const auto out = dir.path / (std::string("t") + (*mode ? "k" : "d") + ".ktrace");
    const auto r =
        run_ktune(std::string("profile ") + mode + " -o " + out.string() + " -- " + exe + " 5000");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("tiny_launches=5100"), std::string::npos) << r.out;
    const Trace t = read_ktrace(out);
    EXPECT_TRUE(t.metadata.complete);
    EXPECT_EQ(t.metadata.dropped_records, 0u);
    std::size_t tiny = 0;
    for (const auto& k : t.kernels) tiny += k.demangled_name.find("tiny_add") != std::string::npos;
    EXPECT_EQ(tiny, 5100u) << mode;
    ASSERT_TRUE(t.metadata.identity.has_value());
    EXPECT_FALSE(t.metadata.identity->devices.empty());
    if (*mode) {
      EXPECT_EQ(t.metadata.mode, "kernels");
      EXPECT_TRUE(t.api_calls.empty());
    } else {
      EXPECT_EQ(t.metadata.mode, "default");
      std::size_t launches = 0, syncs = 0, driver = 0;
      for (const auto& a : t.api_calls) {
        launches += a.name.find("cudaLaunchKernel") == 0;
        syncs += a.name == "cudaDeviceSynchronize";
        driver += a.api == "driver";
      }
      EXPECT_EQ(launches, 5100u);
      EXPECT_EQ(syncs, 2u);  // the API records carry the waits gap attribution needs
      // Driver-API records are on, but a runtime launch makes none: its cost is the runtime's.
      EXPECT_EQ(driver, 0u);
      // The memset is an API record; on the GPU it is recorded only with KTUNE_TRACE_MEMSET=1.
      EXPECT_TRUE(t.memsets.empty());
      std::size_t memset_calls = 0;
      for (const auto& a : t.api_calls) memset_calls += a.name.rfind("cudaMemset", 0) == 0;
      EXPECT_EQ(memset_calls, 1u);
      EXPECT_EQ(t.metadata.records, (std::vector<std::string>{"kernel", "memcpy", "runtime_api",
                                                              "nvtx", "driver_api"}));
      EXPECT_TRUE(t.syncs.empty());      // CUPTI sync records: only with KTUNE_TRACE_SYNC=1
      EXPECT_TRUE(t.overheads.empty());  // only with KTUNE_TRACE_OVERHEAD=1
      for (const auto& k : t.kernels) ASSERT_EQ(k.queued_ns, 0u);  // KTUNE_TRACE_LATENCY=1
    }
  }
}

// GPU tier: the costly record kinds come back when their variables (or --full) ask for them.
// Periodic windows on real launches: one complete trace per window, none of them recording outside
// its window, about the duty cycle's share of the launches in all, and --ingest pushing one run
// per window.
TEST(ProfileGpu, PeriodicWindowsWriteOneCompleteTracePerWindow) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  test::TempDir dir;
  const std::string exe = build_tiny_loop(dir);
  ASSERT_FALSE(exe.empty());
  const auto out = dir.path / "w.ktrace";
  // About 2 s of launches; a 0.1 s window every 0.5 s.
  const auto r = run_ktune("--db " + (dir.path / "fleet.db").string() +
                           " profile --kernels-only --period 0.5s --window 100ms --ingest -o " +
                           out.string() + " -- " + exe + " 600000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));  // every record is in a window's trace
  std::size_t windows = 0, tiny = 0;
  for (std::uint64_t w = 0; std::filesystem::exists(trace_path(out, 0, 0, w)); ++w, ++windows) {
    const Trace t = read_ktrace(trace_path(out, 0, 0, w));
    EXPECT_TRUE(t.metadata.complete) << w;
    EXPECT_EQ(t.metadata.dropped_records, 0u) << w;
    EXPECT_EQ(t.metadata.window.index, w);
    EXPECT_EQ(t.metadata.window.period_s, 0.5);
    EXPECT_EQ(t.metadata.window.window_s, 0.1);
    if (t.kernels.empty()) continue;
    std::uint64_t first = UINT64_MAX, last = 0;
    for (const auto& k : t.kernels) {
      first = std::min(first, k.start_ns);
      last = std::max(last, k.end_ns);
      tiny += k.demangled_name.find("tiny_add") != std::string::npos;
    }
    EXPECT_LE(last - first, 120'000'000u) << "window " << w << " recorded outside its 100 ms";
  }
  EXPECT_GE(windows, 3u);
  EXPECT_GT(tiny, 0u);
  EXPECT_LT(tiny, 600100u * 35 / 100) << "a 20 % duty cycle captured more than 35 %";
  std::size_t added = 0;
  for (std::size_t at = 0; (at = r.out.find(": added (", at)) != std::string::npos; ++at) ++added;
  EXPECT_EQ(added, windows) << r.out;
}

TEST(ProfileGpu, CostlyRecordKindsAreOptIn) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  test::TempDir dir;
  const std::string exe = build_tiny_loop(dir);
  ASSERT_FALSE(exe.empty());
  const auto out = dir.path / "all.ktrace";
  const auto r = run_ktune("profile --full -o " + out.string() + " -- " + exe + " 2000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Trace t = read_ktrace(out);
  ASSERT_EQ(t.kernels.size(), 2100u);
  EXPECT_EQ(t.metadata.mode, "full");
  EXPECT_FALSE(t.syncs.empty());
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets.front().bytes, 1024u * sizeof(float));
  for (const auto& k : t.kernels) {
    ASSERT_GT(k.queued_ns, 0u);
    ASSERT_GE(k.submitted_ns, k.queued_ns);
    ASSERT_LE(k.submitted_ns, k.start_ns);
  }
  // Kernels-only mode keeps latency timestamps (its one switch) and nothing else.
  const auto ko = dir.path / "k.ktrace";
  const auto rk = run_ktune("profile --kernels-only -o " + ko.string() + " -- " + exe + " 2000",
                            "KTUNE_TRACE_LATENCY=1 KTUNE_TRACE_SYNC=1");
  ASSERT_EQ(rk.exit_code, 0) << rk.err;
  const Trace k = read_ktrace(ko);
  ASSERT_EQ(k.kernels.size(), 2100u);
  EXPECT_GT(k.kernels.front().queued_ns, 0u);
  EXPECT_TRUE(k.syncs.empty());
  EXPECT_TRUE(k.api_calls.empty());
}

// GPU tier: a capture window (a cap on records) and a Ctrl-C'd program still leave a valid trace.
TEST(ProfileGpu, RecordCapIsHonouredAndCounted) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  test::TempDir dir;
  const std::string exe = build_tiny_loop(dir);
  ASSERT_FALSE(exe.empty());
  const auto out = dir.path / "cap.ktrace";
  const auto r = run_ktune("profile --kernels-only --max-records 1000 -o " + out.string() + " -- " +
                           exe + " 5000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Trace t = read_ktrace(out);
  EXPECT_EQ(t.kernels.size(), 1000u);
  // Records CUPTI had already delivered past the cap are counted; then capture switches off.
  EXPECT_GT(t.metadata.capped_records, 0u);
  EXPECT_LE(t.metadata.capped_records + t.kernels.size(), 5100u);
}

// GPU tier: a traced program that dies (segfault, abort, SIGKILL) leaves a trace readable up to its
// last flush, marked not complete; the tracer neither hangs nor hides the death.
TEST(ProfileGpu, ProgramThatDiesLeavesItsTraceUpToTheLastFlush) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  test::TempDir dir;
  const std::string exe = build_cuda_program(dir, "tests/trace/fault_loop.cu", "fault_loop");
  ASSERT_FALSE(exe.empty());
  for (const char* how : {"segv", "abort", "hang"}) {
    SCOPED_TRACE(how);
    const auto out = dir.path / (std::string(how) + ".ktrace");
    const auto log = dir.path / (std::string(how) + ".log");
    const pid_t ktune = spawn(profile_fault_loop(exe, out, how, log));
    ASSERT_GT(ktune, 0);
    if (std::string_view(how) == "hang") {
      const pid_t program = wait_until_flushed(log);
      ASSERT_GT(program, 0);
      ::kill(program, SIGKILL);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(ktune, &status, 0), ktune);
    EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the death is the exit status";
    const Trace t = read_ktrace(out);
    EXPECT_FALSE(t.metadata.complete);
    EXPECT_EQ(t.kernels.size(), 1000u);  // all flushed and committed before the program died
  }
}

// GPU tier: SIGINT sent to ktune profile alone (a scheduler, kill) reaches the program, whose
// tracer closes the trace before the signal's default action ends it: the trace is complete.
TEST(ProfileGpu, SigintToProfileReachesTheProgramAndTheTraceIsComplete) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  test::TempDir dir;
  const std::string exe = build_cuda_program(dir, "tests/trace/fault_loop.cu", "fault_loop");
  ASSERT_FALSE(exe.empty());
  const auto out = dir.path / "int.ktrace";
  const auto log = dir.path / "int.log";
  const pid_t ktune = spawn(profile_fault_loop(exe, out, "loop", log));
  ASSERT_GT(ktune, 0);
  ASSERT_GT(wait_until_flushed(log), 0);
  ::kill(ktune, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(ktune, &status, 0), ktune);
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const Trace t = read_ktrace(out);
  EXPECT_TRUE(t.metadata.complete);
  EXPECT_FALSE(t.metadata.finished_at.empty());
  EXPECT_GE(t.kernels.size(), 1000u);
}

}  // namespace
}  // namespace ktune::trace
