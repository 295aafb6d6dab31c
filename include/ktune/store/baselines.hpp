#pragma once
// Gate baselines in the store: every sample of every measured run, keyed by benchmark, shape,
// GPU model and arch, driver, toolkit, ktune build and the measured code's commit. A session is
// one `ktune gate record` (or check) invocation; a baseline is the runs of one session.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/store/store.hpp"

namespace ktune::store {

// What a number depends on besides the code: a change here is the environment's, not the code's.
struct GateEnvironment {
  std::string device_name;  // "NVIDIA H100 80GB HBM3"
  std::string arch;         // "sm_90"
  std::string driver;       // "580.65.06"
  std::string toolkit;      // NVRTC "12.8", plus the suite's extra NVRTC options if any
  std::string ktune_build;  // "0.1.0+abc1234"
  bool operator==(const GateEnvironment&) const = default;
};

struct GateRun {
  std::string run_id;             // unique; made by the writer
  std::string session_id;         // shared by the runs of one invocation
  std::string kind = "baseline";  // baseline | candidate
  std::string suite, benchmark, shape;
  GateEnvironment env;
  std::string code_commit;  // of the code measured ("" when unknown)
  std::string label;        // a name given at record time, e.g. "main"
  nlohmann::json config = nlohmann::json::object();
  std::string recorded_at;  // ISO-8601 UTC
  int sm_clock_mhz = 0;
  std::vector<double> samples_ns;  // every counted sample of the run
  double p50_ns = 0;
};

// Empty fields match everything. `ref` matches a run's label exactly or its commit by prefix.
struct GateRunFilter {
  std::string benchmark, shape, device_name, arch, kind, ref;
  bool with_samples = true;
};

class Baselines {
 public:
  explicit Baselines(Store& store) : store_(store) {}
  // Writes all runs in one transaction (all or nothing); p50_ns is computed from the samples.
  // ktune::Error naming the run for an empty sample list or a missing benchmark name.
  void put_runs(std::vector<GateRun> runs);
  // Matching runs, oldest first.
  std::vector<GateRun> runs(const GateRunFilter& filter);
  // The runs of the newest session among the matching runs (empty when none match).
  std::vector<GateRun> latest_session(const GateRunFilter& filter);
  // Benchmarks with stored runs: (benchmark, shape) pairs.
  std::vector<std::pair<std::string, std::string>> benchmarks();

 private:
  Store& store_;
};

void to_json(nlohmann::json& j, const GateEnvironment& e);

}  // namespace ktune::store
