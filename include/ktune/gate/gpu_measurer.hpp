#pragma once
// The gate's real Measurer: spec benchmarks through bench's candidate pipeline (one pipeline per
// benchmark, kept for the whole check so each compiles and fills its inputs once), programs run
// as child processes whose stdout is parsed. Needs a GPU for spec benchmarks (NoGpuError).
#include <map>
#include <memory>

#include "ktune/gate/gate.hpp"
#include "ktune/store/store.hpp"

namespace ktune::gate {

class GpuMeasurer : public Measurer {
 public:
  // `store` answers "cached" configurations; may be null when the suite has none.
  GpuMeasurer(const Suite& suite, int device, store::Store* store);
  ~GpuMeasurer() override;
  RunSamples run(const SuiteBenchmark& b) override;
  nlohmann::json config(const SuiteBenchmark& b) override;
  store::GateEnvironment environment() override;

 private:
  struct Prepared;
  Prepared& prepare(const SuiteBenchmark& b);
  const Suite& suite_;
  int device_;
  store::Store* store_;
  std::map<std::string, std::unique_ptr<Prepared>> prepared_;
};

// Runs `argv` (no shell) through core's subprocess helper, returns its stdout. ktune::Error naming
// the program when it cannot start, exits non-zero (with the end of its stderr), or runs past
// `timeout_s` (it and what it started are stopped).
std::string run_program(const std::vector<std::string>& argv, double timeout_s = kProgramTimeoutS);

}  // namespace ktune::gate
