#pragma once
// Fixtures of the fleet tests: hand-built .ktrace files and specs of several shapes.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ktune/trace/ktrace.hpp"

namespace ktune::test {

struct FakeKernel {
  std::string name;
  std::vector<std::uint64_t> durations_ns;
  std::int32_t grid_x = 1, block_x = 128;
  std::int32_t grid_y = 1, block_y = 1;
  std::uint32_t device = 0;  // CUDA ordinal; write_trace's `gpus` must cover it
};

// A .ktrace of one process (pid, started_at) on `gpus` "NVIDIA H100 80GB HBM3" (sm_90); with
// `window`, the trace of that periodic capture window (--period 60s --window 2s).
void write_trace(const std::filesystem::path& path, const std::vector<FakeKernel>& kernels,
                 std::int64_t pid = 4242, const std::string& started_at = "2026-11-23T10:00:00Z",
                 bool complete = true, std::optional<std::uint64_t> window = std::nullopt,
                 int gpus = 1);

// A --gemm-shapes trace of one process: for each (line of tests/fixtures/cublaslt/h100-bf16.log,
// counted from 0; calls), that many cuBLASLt calls, each launching one nvjet kernel of
// `kernel_ns` on the calling thread.
void write_gemm_trace(const std::filesystem::path& path,
                      const std::vector<std::pair<int, int>>& line_calls, std::uint64_t kernel_ns,
                      std::int64_t pid = 4242,
                      const std::string& started_at = "2026-11-23T10:00:00Z");

// The built-in copy spec with ProblemSize n, written (with its .cu) into dir; returns its path.
std::filesystem::path copy_spec(const std::filesystem::path& dir, std::int64_t n);

}  // namespace ktune::test
