#pragma once
// The tuning problem: the community's T1 JSON, accepted as is, plus ktune's additions in a
// top-level "ktune" object beside it. See docs/tuning.md for the fields.
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/core/dtype.hpp"
#include "ktune/spec/expression.hpp"
#include "ktune/store/bucket.hpp"

namespace ktune::tune {

// One tunable parameter: ConfigurationSpace.TuningParameters[i].
struct Parameter {
  std::string name;
  std::string type;           // "int", "float", "bool", "string" (T1 "Type")
  std::vector<Value> values;  // in the order the spec lists them; unique
  std::optional<Value> default_value;
};

// ConfigurationSpace.Conditions[i]: a Python-style expression that a valid configuration makes
// true.
struct Constraint {
  Expression expression;
  std::vector<std::string> parameters;  // as listed by T1 ("Parameters"); informative only
};

// An argument's T1 MemoryType, AccessType and FillType, each named as T1 spells it.
enum class MemoryType { vector, scalar };
enum class AccessType { read_only, write_only, read_write };
enum class FillType { constant, random, binary_raw, generator };
const char* to_string(MemoryType m);  // "Vector", "Scalar"
const char* to_string(AccessType a);  // "ReadOnly", "WriteOnly", "ReadWrite"
const char* to_string(FillType f);    // "Constant", "Random", "BinaryRaw", "Generator"

// One kernel argument (KernelSpecification.Arguments[i]).
struct Argument {
  std::string name;
  std::string type;  // T1 "Type" as written: "float", "double", "int32", "half", "float4", ...
  // `type` as an element type ktune fills and compares; nullopt for one it has none of (an
  // OpenCL vector type): the spec is read and enumerated, and a run names the argument. A CUDA
  // vector type ("double3", "float4", "int2") is `width` elements of `dtype` each: a Size of n
  // holds n * width of them.
  std::optional<DType> dtype;
  int width = 1;
  MemoryType memory_type = MemoryType::vector;
  AccessType access_type = AccessType::read_write;
  bool constant_memory = false;  // T1 "MemType": "Constant": lives in __constant__ memory
  FillType fill_type = FillType::constant;
  // Number of elements, evaluated once for every configuration: it reads ProblemSize, the shape
  // variables, and the parameters as their lists of values ("max(filter_width)"), as Kernel
  // Tuner's T1 reader evaluates it.
  Expression size;
  std::optional<std::uint64_t> random_seed;  // T1 "RandomSeed": this argument's own random fill
  Value fill_value = Value(0.0);
  std::filesystem::path data_file;  // BinaryRaw: resolved against the spec's directory
  // Generator: DataSource as an expression of the element index `i` (0 to Size * width - 1), as
  // BAT's reader computes it; it may also read ProblemSize and the shape variables.
  std::optional<Expression> generator;
  bool output = false;  // compared against the reference after each run
};

struct Dim3Expression {
  Expression x, y, z;
};

// Where the grid comes from. Kernel Tuner's T1 reader takes ProblemSize divided by the product of
// the GridDiv expressions (block_size_x/y/z when a GridDiv is absent); GlobalSize is ktune's way
// for specs that give no GridDiv.
enum class GridSource { grid_div, global_size };
const char* to_string(GridSource g);  // "griddiv", "global-size"
std::optional<GridSource> grid_source_from_string(std::string_view s);

// KernelSpecification: what to compile and how to launch it.
struct KernelSpec {
  std::string language;  // "CUDA" (tuned) or "OpenCL" (read and enumerated, not run)
  std::vector<std::string> compiler_options;
  std::string kernel_name;
  std::filesystem::path kernel_file;  // resolved against the spec's directory
  // The folder every file the spec names stays in (core/paths.hpp confined_path): the spec's own,
  // or its parent when KernelFile is found there (Kernel Tuner's lookup one folder up).
  std::filesystem::path files_root;
  std::string global_size_type;  // "CUDA": GlobalSize counts blocks; "OpenCL": threads
  Dim3Expression local_size;     // block
  std::optional<Dim3Expression> global_size;
  std::array<std::vector<Expression>, 3> grid_div;  // GridDivX/Y/Z: products divide ProblemSize
  std::vector<Expression> problem_size;             // ints in T1; expressions over shape variables
  GridSource grid_source = GridSource::grid_div;    // from what the spec gives; --grid overrides
  Expression shared_memory_bytes;                   // dynamic shared memory per block
  std::vector<Argument> arguments;
};

// A shape variable's "bucket" as a spec writes it: "exact", "pow2" (the power-of-two range at or
// above) or "multiple:N" (the multiple of N at or above); the rule is the store's (bucket.hpp),
// named after the variable. Throws ktune::Error naming the text and the accepted forms.
store::DimRule parse_bucket_rule(std::string_view text, const std::string& name);

struct ShapeVariable {
  std::string name;
  store::DimRule bucket;  // bucket.name == name
  std::optional<std::int64_t> default_value;
};

// The candidate's results are checked against this: a fixed configuration of the same kernel, or
// another kernel (file + name) with the same arguments.
struct Reference {
  std::map<std::string, Value> configuration;  // empty when a kernel is given
  std::filesystem::path kernel_file;
  std::string kernel_name;
  bool is_kernel() const { return !kernel_name.empty(); }
};

// A spec's own verification tolerance. Without one, each output is compared with the tolerance
// of its dtype (bench/verify.hpp), since one default for all would be too tight for 16-bit outputs.
struct Tolerance {
  double rtol = 1e-5;  // relative; the default of a "tolerance" object that leaves it out
  double atol = 1e-8;  // absolute; likewise
};

// The top-level "ktune" object. Everything is optional; defaults come from the T1 part.
struct KtuneExtension {
  std::string op;     // cache key, e.g. "dedispersion"; default: the BenchmarkName, else KernelName
  std::string dtype;  // e.g. "f32"; default: the first output argument's type, else the first's
  std::optional<Reference> reference;
  std::optional<Tolerance> tolerance;  // set: the spec gave a "tolerance" object
  std::optional<Expression> flops;     // per launch; for achieved FLOP/s
  std::optional<Expression> bytes;     // per launch; for achieved bandwidth
  std::vector<ShapeVariable> shape;
};

// Grid and block of one launch.
struct LaunchGeometry {
  std::array<std::int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  std::int64_t shared_memory_bytes = 0;
  // Whether CUDA can launch it at all: every dimension at least 1, at most 2^31 - 1 blocks and
  // 1024 threads a dimension. The device's own limits (threads a block, shared memory) are the
  // candidate pipeline's check (bench::launch_problem).
  bool launchable() const;
};

struct ProblemSpec {
  std::string source;  // file name for messages ("T1.json" or "<memory>")
  std::string name;    // General.BenchmarkName
  std::vector<Parameter> parameters;
  std::vector<Constraint> constraints;
  KernelSpec kernel;
  KtuneExtension ktune;
  // BAT's "BenchmarkConfig" (NAME: value): its runner defines each for the compiler and lets the
  // launch expressions read it, so ktune does both; a parameter of the same name wins.
  std::vector<std::pair<std::string, Value>> benchmark_config;
  // What ktune read differently from the letter of the file, one sentence each (an ignored Default,
  // a kernel file found beside the spec's folder): shown before a run.
  std::vector<std::string> notes;

  // Reads and validates a T1 file. Throws ktune::Error naming the file, the field and, inside an
  // expression, the position.
  static ProblemSpec load(const std::filesystem::path& path);
  // `source` names the origin in messages; relative paths resolve against `base_dir`.
  static ProblemSpec parse(const nlohmann::json& j, std::string source,
                           const std::filesystem::path& base_dir = {});

  // The names every expression may read besides the parameters: ProblemSize (a list), the shape
  // variables (from `shape`, else their defaults) and the BenchmarkConfig entries.
  MapScope constants(const std::map<std::string, std::int64_t>& shape = {}) const;
  // constants() plus every parameter bound to its list of values: the scope of argument sizes.
  MapScope size_scope(const Scope& constants) const;
  // Grid, block and shared memory for one configuration (its values bound over constants()), with
  // the grid from `source` (default: kernel.grid_source).
  LaunchGeometry launch_geometry(const Scope& config) const;
  LaunchGeometry launch_geometry(const Scope& config, GridSource source) const;
  // Both GridDiv and GlobalSize are given and give different grids for `config`: one sentence
  // saying which is used and the flag that picks the other; else nullopt.
  std::optional<std::string> grid_disagreement(const Scope& config) const;
  // True when ktune can compile and run the kernel (CUDA); OpenCL specs are read and enumerated.
  bool runnable() const { return kernel.language == "CUDA"; }
};

}  // namespace ktune::tune
