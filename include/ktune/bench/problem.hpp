#pragma once
// One configuration of a kernel, ready to compile and launch: source and flags, launch geometry,
// arguments, work counts, and the reference it is checked against. Spec-independent plain data:
// the spec binding (tune/spec_problem.hpp) fills it from a T1 spec and a configuration.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/bench/verify.hpp"
#include "ktune/cuda/device_utils.hpp"
#include "ktune/cuda/nvrtc.hpp"

namespace ktune::bench {

struct KernelArg {
  enum class Kind { buffer, scalar, constant_memory };
  // values: `values` element by element (a T1 Generator, computed on the host once per problem).
  enum class Fill { random, constant, values };
  std::string name;
  Kind kind = Kind::buffer;
  cuda::DType dtype = cuda::DType::f32;
  std::size_t count = 1;     // elements (buffer, constant memory)
  Fill fill = Fill::random;  // buffers and constant memory; random is the default: never time zeros
  double value = 0;          // the constant fill, or the scalar's value
  std::optional<std::uint64_t> seed;  // the random fill's own seed (T1 RandomSeed)
  // Fill::values: count of them, shared by the copies of a problem made for each candidate.
  std::shared_ptr<const std::vector<double>> values;
  bool output = false;  // poisoned before each checked run and compared with the reference
  std::optional<Tolerance> tolerance;  // per output; default_tolerance(dtype) when empty
  std::size_t bytes() const { return count * cuda::dtype_bytes(dtype); }
};

struct KernelLaunch {
  std::string source;              // CUDA C++
  std::string program_name;        // for NVRTC logs: "gemv.cu"
  std::string kernel_name;         // extern "C" name, or a name expression for a template
  std::vector<std::string> flags;  // NVRTC options, the configuration as -DNAME=VALUE among them
  std::vector<std::pair<std::string, std::string>> headers;  // local #include "..." files
  std::array<unsigned, 3> grid{1, 1, 1}, block{1, 1, 1}, cluster{1, 1, 1};
  unsigned dynamic_shared_bytes = 0;
  bool uses_cluster() const { return cluster[0] * cluster[1] * cluster[2] > 1; }
};

struct Problem {
  std::string name;  // kernel or benchmark name, for results
  nlohmann::json config = nlohmann::json::object();
  KernelLaunch launch;
  // In the spec's order. A constant-memory argument is copied to its __constant__ symbol, and also
  // passed as a parameter when the kernel declares one for every argument.
  std::vector<KernelArg> args;
  std::optional<KernelLaunch> reference;  // same arguments; empty: results are not verified
  double flop = 0, bytes = 0;             // per launch
};

// The type a scalar argument is passed as to a kernel parameter `param_bytes` wide: the spec's type
// keeps its kind (floating point, signed or unsigned integer) and takes the parameter's width, as
// a C++ call converts an argument to its parameter (a double 1.75 given to a float parameter is
// passed as 1.75f). nullopt when that kind has no type of that width.
std::optional<cuda::DType> scalar_type_for(cuda::DType spec_type, std::size_t param_bytes);

// NVRTC options of a launch (its flags, plus the kernel as a name expression) for `arch`.
cuda::CompileOptions compile_options(const KernelLaunch& launch, const std::string& arch);

}  // namespace ktune::bench
