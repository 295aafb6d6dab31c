// Tracer options through the environment, sampling and trace paths.
#include "ktune/trace/options.hpp"

#include <map>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune::trace {
namespace {

GetEnv env_of(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST(Options, DefaultsWithAnEmptyEnvironment) {
  const TracerOptions o = options_from_env(env_of({}));
  EXPECT_EQ(o.output, "ktune.ktrace");
  EXPECT_FALSE(o.kernels_only);
  EXPECT_EQ(o.window.delay_s, 0);
  EXPECT_EQ(o.window.sample_one_in, 1u);
  EXPECT_EQ(o.flush_period_ms, 1000u);
  EXPECT_EQ(o.buffer_mib, 8u);
  EXPECT_EQ(o.root_pid, 0);
  // Driver-API records are on; the record kinds with a per-launch cost are off.
  EXPECT_TRUE(o.driver_api);
  EXPECT_FALSE(o.memset_records);
  EXPECT_FALSE(o.sync_records);
  EXPECT_FALSE(o.latency_timestamps);
  EXPECT_FALSE(o.overhead_records);
  EXPECT_EQ(mode_of(o), TraceMode::standard);
  EXPECT_EQ(record_kinds(o),
            (std::vector<std::string>{"kernel", "memcpy", "runtime_api", "nvtx", "driver_api"}));
}

TEST(TracerOptions, ModesReadAndPrintByTheirOneName) {
  for (const TraceMode m : {TraceMode::standard, TraceMode::kernels, TraceMode::full})
    EXPECT_EQ(parse_trace_mode(to_string(m)), m);
  EXPECT_STREQ(to_string(TraceMode::standard), "default");
  EXPECT_THROW(parse_trace_mode("fast"), Error);
}

TEST(Options, FullModeTurnsOnEveryKindUnlessOneIsSetOff) {
  const TracerOptions full = options_from_env(env_of({{"KTUNE_TRACE_MODE", "full"}}));
  EXPECT_FALSE(full.kernels_only);
  EXPECT_TRUE(full.memset_records && full.sync_records && full.latency_timestamps &&
              full.overhead_records && full.driver_api);
  EXPECT_EQ(mode_of(full), TraceMode::full);
  EXPECT_EQ(record_kinds(full),
            (std::vector<std::string>{"kernel", "memcpy", "runtime_api", "nvtx", "driver_api",
                                      "memset", "sync", "overhead", "latency"}));
  // A kind's own variable still wins over the mode; the trace then says "default".
  const TracerOptions most =
      options_from_env(env_of({{"KTUNE_TRACE_MODE", "full"}, {"KTUNE_TRACE_SYNC", "0"}}));
  EXPECT_FALSE(most.sync_records);
  EXPECT_TRUE(most.memset_records);
  EXPECT_EQ(mode_of(most), TraceMode::standard);
  // Through the environment, as ktune profile --full hands it over.
  TracerOptions o;
  o.set_full();
  std::map<std::string, std::string> vars;
  for (const auto& [k, v] : options_to_env(o)) vars[k] = v;
  EXPECT_EQ(mode_of(options_from_env(env_of(vars))), TraceMode::full);
  // Kernels-only keeps latency timestamps, its one switch, and nothing else.
  TracerOptions k;
  k.kernels_only = true;
  k.latency_timestamps = true;
  k.memset_records = true;
  EXPECT_EQ(mode_of(k), TraceMode::kernels);
  EXPECT_EQ(record_kinds(k), (std::vector<std::string>{"kernel", "latency"}));
}

TEST(Options, RecordKindSwitchesAreOneOrZero) {
  const TracerOptions on = options_from_env(env_of({{"KTUNE_TRACE_MEMSET", "1"},
                                                    {"KTUNE_TRACE_SYNC", "1"},
                                                    {"KTUNE_TRACE_LATENCY", "1"},
                                                    {"KTUNE_TRACE_OVERHEAD", "1"}}));
  EXPECT_TRUE(on.memset_records);
  EXPECT_TRUE(on.sync_records);
  EXPECT_TRUE(on.latency_timestamps);
  EXPECT_TRUE(on.overhead_records);
  EXPECT_TRUE(on.driver_api);
  const TracerOptions off = options_from_env(env_of({{"KTUNE_TRACE_DRIVER_API", "0"}}));
  EXPECT_FALSE(off.driver_api);
  try {
    options_from_env(env_of({{"KTUNE_TRACE_LATENCY", "yes"}}));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("KTUNE_TRACE_LATENCY='yes' is not 0 or 1"),
              std::string::npos)
        << e.what();
  }
  // Written only when not the default: a caller without these options (ktune profile) leaves
  // its environment's values alone.
  for (const auto& [k, v] : options_to_env(TracerOptions{}))
    EXPECT_TRUE(k != "KTUNE_TRACE_DRIVER_API" && k != "KTUNE_TRACE_MEMSET" &&
                k != "KTUNE_TRACE_SYNC" && k != "KTUNE_TRACE_LATENCY" &&
                k != "KTUNE_TRACE_OVERHEAD")
        << k;
  TracerOptions no_driver;
  no_driver.driver_api = false;
  bool written = false;
  for (const auto& [k, v] : options_to_env(no_driver))
    written |= k == "KTUNE_TRACE_DRIVER_API" && v == "0";
  EXPECT_TRUE(written);
}

TEST(Options, RoundTripThroughTheEnvironment) {
  TracerOptions o;
  o.output = "/tmp/run/x.ktrace";
  o.kernels_only = true;
  o.window.delay_s = 2.5;
  o.window.duration_s = 10;
  o.window.range = "nvtx:train step";
  o.window.sample_one_in = 8;
  o.window.job_id = "job 42";
  o.window.max_records = 123456789012ull;
  o.flush_period_ms = 250;
  o.buffer_mib = 16;
  o.root_pid = 4242;
  o.driver_api = false;
  o.memset_records = true;
  o.sync_records = true;
  o.latency_timestamps = true;
  o.overhead_records = true;
  o.counters.launch_shapes = 2;
  std::map<std::string, std::string> vars;
  for (const auto& [k, v] : options_to_env(o)) vars[k] = v;
  const TracerOptions back = options_from_env(env_of(vars));
  EXPECT_EQ(back.output, o.output);
  EXPECT_TRUE(back.kernels_only);
  EXPECT_EQ(back.window.delay_s, 2.5);
  EXPECT_EQ(back.window.duration_s, 10);
  EXPECT_EQ(back.window.range, "nvtx:train step");
  EXPECT_EQ(back.window.sample_one_in, 8u);
  EXPECT_EQ(back.window.job_id, "job 42");
  EXPECT_EQ(back.window.max_records, 123456789012ull);
  EXPECT_EQ(back.flush_period_ms, 250u);
  EXPECT_EQ(back.buffer_mib, 16u);
  EXPECT_EQ(back.root_pid, 4242);
  EXPECT_FALSE(back.driver_api);
  EXPECT_TRUE(back.memset_records);
  EXPECT_TRUE(back.sync_records);
  EXPECT_TRUE(back.latency_timestamps);
  EXPECT_TRUE(back.overhead_records);
  EXPECT_EQ(back.counters.launch_shapes, 2u);
  // Every variable written is in the one documented list.
  for (const auto& [k, v] : vars) {
    bool listed = false;
    for (const auto& e : tracer_settings()) listed |= k == e.env;
    EXPECT_TRUE(listed) << k;
  }
}

TEST(Options, BadValuesNameTheVariable) {
  auto expect_error = [](std::map<std::string, std::string> vars, const std::string& needle) {
    try {
      options_from_env(env_of(std::move(vars)));
      ADD_FAILURE() << "expected an error mentioning " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).back(), '.');
    }
  };
  expect_error({{"KTUNE_TRACE_DELAY_S", "soon"}}, "KTUNE_TRACE_DELAY_S='soon'");
  expect_error({{"KTUNE_TRACE_DELAY_S", "-1"}}, "KTUNE_TRACE_DELAY_S");
  expect_error({{"KTUNE_TRACE_SAMPLE", "0"}}, "KTUNE_TRACE_SAMPLE");
  expect_error({{"KTUNE_TRACE_MAX_RECORDS", "12abc"}}, "KTUNE_TRACE_MAX_RECORDS");
  expect_error({{"KTUNE_TRACE_MODE", "everything"}}, "KTUNE_TRACE_MODE='everything'");
  expect_error({{"KTUNE_TRACE_LAUNCH_SHAPES", "0"}}, "KTUNE_TRACE_LAUNCH_SHAPES");
  expect_error({{"KTUNE_TRACE_RANGE", "nvtx:"}}, "KTUNE_TRACE_RANGE");
  expect_error({{"KTUNE_TRACE_FLUSH_MS", "1"}}, "KTUNE_TRACE_FLUSH_MS");
}

// --gemm-shapes: one row of the settings table gives the flag and the variable; --full does not
// turn it on (it costs every GEMM call), and it reaches the tracer only when on.
TEST(Options, TorchOpsIsOptInAndRoundTrips) {
  const TracerSetting& s = tracer_setting("ops");
  EXPECT_STREQ(s.flag, "--ops");
  EXPECT_STREQ(s.env, "KTUNE_TRACE_OPS");
  EXPECT_FALSE(options_from_env(env_of({})).torch_ops);
  const TracerOptions on = options_from_env(env_of({{"KTUNE_TRACE_OPS", "1"}}));
  EXPECT_TRUE(on.torch_ops);
  std::map<std::string, std::string> vars;
  for (const auto& [k, v] : options_to_env(on)) vars[k] = v;
  // sitecustomize.py reads exactly this spelling.
  EXPECT_EQ(vars.at("KTUNE_TRACE_OPS"), "1");
  for (const auto& [k, v] : options_to_env(TracerOptions{})) EXPECT_NE(k, "KTUNE_TRACE_OPS");
}

TEST(Options, GemmShapesIsOptInAndRoundTrips) {
  const TracerSetting& s = tracer_setting("gemm-shapes");
  EXPECT_STREQ(s.flag, "--gemm-shapes");
  EXPECT_STREQ(s.env, "KTUNE_TRACE_GEMM_SHAPES");
  EXPECT_FALSE(options_from_env(env_of({})).gemm_shapes);
  EXPECT_FALSE(options_from_env(env_of({{"KTUNE_TRACE_MODE", "full"}})).gemm_shapes);
  const TracerOptions on = options_from_env(env_of({{"KTUNE_TRACE_GEMM_SHAPES", "1"}}));
  EXPECT_TRUE(on.gemm_shapes);
  const auto kinds = record_kinds(on);
  ASSERT_GE(kinds.size(), 2u);
  EXPECT_EQ(kinds[kinds.size() - 2], "gemm_call");
  EXPECT_EQ(kinds.back(), "gemm_event");
  std::map<std::string, std::string> vars;
  for (const auto& [k, v] : options_to_env(on)) vars[k] = v;
  EXPECT_EQ(vars.at("KTUNE_TRACE_GEMM_SHAPES"), "1");
  EXPECT_TRUE(options_from_env(env_of(vars)).gemm_shapes);
  for (const auto& [k, v] : options_to_env(TracerOptions{}))
    EXPECT_NE(k, "KTUNE_TRACE_GEMM_SHAPES") << "off is the default: left to the environment";
  try {
    options_from_env(env_of({{"KTUNE_TRACE_GEMM_SHAPES", "yes"}}));
    FAIL() << "expected ktune::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("KTUNE_TRACE_GEMM_SHAPES='yes' is not 0 or 1"),
              std::string::npos)
        << e.what();
  }
}

TEST(Options, GemmShapesConflictsAreOneSentence) {
  TracerOptions o;
  o.gemm_shapes = true;
  auto error_of = [&](std::map<std::string, std::string> vars) -> std::string {
    try {
      check_gemm_shapes(o, env_of(std::move(vars)));
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of({}), "");
  // The tracer takes over cuBLASLt's logger: a logger the user configured is refused, not
  // silently redirected.
  for (const char* name : {"CUBLASLT_LOG_LEVEL", "CUBLASLT_LOG_MASK", "CUBLASLT_LOG_FILE"})
    EXPECT_EQ(error_of({{name, "5"}}),
              fmt::format("--gemm-shapes (KTUNE_TRACE_GEMM_SHAPES) takes over cuBLASLt's logger, "
                          "but {0}=5 configures it already; unset {0} or drop --gemm-shapes.",
                          name));
  EXPECT_EQ(error_of({{"CUBLASLT_LOG_LEVEL", ""}}), "");  // set but empty: as unset
  // Each capture window's trace keeps the calls made in it.
  o.window.period_s = 60;
  o.window.window_s = 2;
  EXPECT_EQ(error_of({}), "");
  o.gemm_shapes = false;
  EXPECT_EQ(error_of({{"CUBLASLT_LOG_LEVEL", "0"}}), "");  // off: the user's logging is theirs
}

TEST(Options, DurationsTakeAUnitOrBareSeconds) {
  EXPECT_EQ(parse_duration_s("60s"), 60.0);
  EXPECT_EQ(parse_duration_s("2s"), 2.0);
  EXPECT_DOUBLE_EQ(*parse_duration_s("0.1s"), 0.1);
  EXPECT_DOUBLE_EQ(*parse_duration_s("100ms"), 0.1);
  EXPECT_EQ(parse_duration_s("1.5m"), 90.0);
  EXPECT_EQ(parse_duration_s("1h"), 3600.0);
  EXPECT_EQ(parse_duration_s("2.5"), 2.5);
  EXPECT_EQ(parse_duration_s("0"), 0.0);
  for (const char* bad :
       {"", "s", "ms", "soon", "-1s", "1x", "1 s", " 1s", "1s ", "inf", "nan", "1e999s", "1sms"})
    EXPECT_FALSE(parse_duration_s(bad).has_value()) << bad;
}

// A fleet's launcher sets the variables itself, with units; ktune profile hands over seconds.
TEST(Options, PeriodicWindowsThroughTheEnvironment) {
  const TracerOptions o =
      options_from_env(env_of({{"KTUNE_TRACE_PERIOD", "60s"}, {"KTUNE_TRACE_WINDOW", "2s"}}));
  EXPECT_EQ(o.window.period_s, 60);
  EXPECT_EQ(o.window.window_s, 2);
  TracerOptions p;
  p.window.period_s = 2;
  p.window.window_s = 0.1;
  p.window.delay_s = 0.25;
  std::map<std::string, std::string> vars;
  for (const auto& [k, v] : options_to_env(p)) vars[k] = v;
  EXPECT_EQ(vars["KTUNE_TRACE_PERIOD"], "2");
  EXPECT_EQ(vars["KTUNE_TRACE_WINDOW"], "0.1");
  const TracerOptions back = options_from_env(env_of(vars));
  EXPECT_EQ(back.window.period_s, 2);
  EXPECT_EQ(back.window.window_s, 0.1);
  EXPECT_EQ(back.window.delay_s, 0.25);
  // The older settings take the same durations.
  EXPECT_EQ(options_from_env(env_of({{"KTUNE_TRACE_DELAY_S", "500ms"}})).window.delay_s, 0.5);
  EXPECT_EQ(options_from_env(env_of({{"KTUNE_TRACE_DURATION_S", "2m"}})).window.duration_s, 120);
}

TEST(Options, BadPeriodicWindowsAreOneSentence) {
  auto error_of = [](std::map<std::string, std::string> vars) -> std::string {
    try {
      options_from_env(env_of(std::move(vars)));
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.back(), '.') << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      return msg;
    }
    ADD_FAILURE() << "expected an error";
    return "";
  };
  EXPECT_NE(error_of({{"KTUNE_TRACE_PERIOD", "often"}}).find("KTUNE_TRACE_PERIOD='often'"),
            std::string::npos);
  EXPECT_NE(error_of({{"KTUNE_TRACE_WINDOW", "2s"}})
                .find("--window (KTUNE_TRACE_WINDOW) needs "
                      "--period (KTUNE_TRACE_PERIOD)"),
            std::string::npos);
  EXPECT_NE(error_of({{"KTUNE_TRACE_PERIOD", "60s"}}).find("--window"), std::string::npos);
  EXPECT_NE(error_of({{"KTUNE_TRACE_PERIOD", "1s"}, {"KTUNE_TRACE_WINDOW", "2s"}})
                .find("must fit in its period"),
            std::string::npos);
  EXPECT_NE(error_of({{"KTUNE_TRACE_PERIOD", "60s"},
                      {"KTUNE_TRACE_WINDOW", "2s"},
                      {"KTUNE_TRACE_RANGE", "profiler"}})
                .find("--range"),
            std::string::npos);
  TraceWindow whole;  // a window as long as its period is allowed: continuous, one file each
  whole.period_s = whole.window_s = 5;
  EXPECT_NO_THROW(check_schedule(whole));
}

TEST(Options, SlurmJobIdIsTheDefaultSamplingKey) {
  EXPECT_EQ(options_from_env(env_of({{"SLURM_JOB_ID", "991"}})).window.job_id, "991");
  EXPECT_EQ(options_from_env(env_of({{"SLURM_JOB_ID", "991"}, {"KTUNE_TRACE_JOB_ID", "a"}}))
                .window.job_id,
            "a");
}

TEST(Sampling, DeterministicPerJobAndRoughlyOneInN) {
  TraceWindow w;
  w.sample_one_in = 4;
  w.job_id = "job-1";
  int chosen = 0;
  for (int rank = 0; rank < 4000; ++rank) {
    const std::string key = "rank:" + std::to_string(rank);
    const bool in = sampled_in(w, key);
    EXPECT_EQ(in, sampled_in(w, key));  // same job, same answer
    chosen += in;
  }
  EXPECT_GT(chosen, 800);
  EXPECT_LT(chosen, 1200);
  // Another job picks other processes.
  TraceWindow other = w;
  other.job_id = "job-2";
  int same = 0;
  for (int rank = 0; rank < 400; ++rank) {
    const std::string key = "rank:" + std::to_string(rank);
    same += sampled_in(w, key) == sampled_in(other, key);
  }
  EXPECT_LT(same, 400);
  w.sample_one_in = 1;
  EXPECT_TRUE(sampled_in(w, "anything"));
}

TEST(Sampling, ProcessKeyPrefersTheLaunchersRank) {
  EXPECT_EQ(process_key(env_of({{"RANK", "3"}, {"LOCAL_RANK", "1"}})), "rank:3");
  EXPECT_EQ(process_key(env_of({{"SLURM_PROCID", "7"}})), "rank:7");
  EXPECT_EQ(process_key(env_of({})).rfind("pid:", 0), 0u);
}

TEST(TracePath, RootWritesOutChildrenWritePidFiles) {
  EXPECT_EQ(trace_path("/r/run.ktrace", 0, 55), "/r/run.ktrace");
  EXPECT_EQ(trace_path("/r/run.ktrace", 55, 55), "/r/run.ktrace");
  EXPECT_EQ(trace_path("/r/run.ktrace", 55, 56), "/r/run.56.ktrace");
  EXPECT_EQ(trace_path("/r/run", 55, 56), "/r/run.56.ktrace");
  // Periodic windows: one trace per window.
  EXPECT_EQ(trace_path("/r/run.ktrace", 55, 55, 0), "/r/run.w0.ktrace");
  EXPECT_EQ(trace_path("/r/run.ktrace", 0, 9, 12), "/r/run.w12.ktrace");
  EXPECT_EQ(trace_path("/r/run.ktrace", 55, 56, 3), "/r/run.56.w3.ktrace");
}

TEST(TracePath, ProfileFindsEveryNameTracePathGives) {
  const std::filesystem::path out = "/r/run.ktrace";
  for (const auto& p : {trace_path(out, 5, 5), trace_path(out, 5, 6), trace_path(out, 5, 5, 0),
                        trace_path(out, 5, 6, 41)})
    EXPECT_TRUE(is_trace_of(out, p)) << p;
  EXPECT_TRUE(is_trace_of("/r/run", trace_path("/r/run", 5, 6, 2)));
  for (const char* other : {"/r/run.x.ktrace", "/r/run.w.ktrace", "/r/run.12.w.ktrace",
                            "/r/run.12.13.ktrace", "/r/run.w1.w2.ktrace", "/r/run.12.ktrace.bak",
                            "/r/other.12.ktrace", "/s/run.12.ktrace", "/r/run..ktrace"})
    EXPECT_FALSE(is_trace_of(out, other)) << other;
}

TEST(TracedApis, LaunchesCopiesSyncsButNotGraphBuilding) {
  for (const char* yes :
       {"cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cuLaunchKernelEx", "cudaMemcpyAsync",
        "cuMemcpyHtoD_v2", "cudaMemsetAsync", "cudaStreamSynchronize", "cuCtxSynchronize",
        "cudaDeviceSynchronize", "cudaGraphLaunch", "cudaStreamWaitEvent", "cudaProfilerStart"})
    EXPECT_TRUE(is_traced_api(yes)) << yes;
  for (const char* no : {"cudaGetDevice", "cudaMalloc", "cudaGraphAddMemcpyNode",
                         "cudaGraphExecKernelNodeSetParams", "cudaStreamIsCapturing",
                         "cudaOccupancyMaxActiveBlocksPerMultiprocessor", "cuFuncGetAttribute"})
    EXPECT_FALSE(is_traced_api(no)) << no;
}

// The table's defaults are what TracerOptions{} hands the tracer, so --help and the docs cannot
// drift from the code.
TEST(Options, SettingsTableDefaultsAreTheCodesDefaults) {
  const auto vars = options_to_env(TracerOptions{});
  for (const TracerSetting& s : tracer_settings()) {
    if (!*s.fallback || s.fallback[0] == '$') continue;
    for (const auto& [k, v] : vars)
      if (k == s.env) EXPECT_EQ(v, s.fallback) << s.name;
  }
  EXPECT_EQ(options_from_env([](const char*) { return nullptr; }).counters.launch_count,
            std::stoull(tracer_setting("launch-count").fallback));
}

// docs/configuration.md's tracer table is the settings table, rendered; regenerate it from
// tracer_settings_markdown() (this test prints it) when a setting changes.
TEST(Options, ConfigurationDocMatchesTheSettingsTable) {
  std::ifstream in(std::filesystem::path(KTUNE_SOURCE_DIR) / "docs" / "configuration.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string begin = "<!-- tracer settings: generated -->\n",
                    end = "<!-- /tracer settings -->";
  const auto b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos) << "docs/configuration.md lacks the marker " << begin;
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), tracer_settings_markdown())
      << "paste this between the markers in docs/configuration.md:\n"
      << tracer_settings_markdown();
}

}  // namespace
}  // namespace ktune::trace
