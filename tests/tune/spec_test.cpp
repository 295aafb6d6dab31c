#include "ktune/spec/spec.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "datasets.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/tune/spec_problem.hpp"

namespace ktune::tune {
namespace {

using nlohmann::json;

json fixture(const std::string& name) {
  return json::parse(read_file(test::fixtures_dir() / name));
}

// The message of the Error that parsing `j` throws.
std::string error_of(const json& j) {
  try {
    ProblemSpec::parse(j, "spec.json");
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return {};
}

TEST(Spec, ReadsT1AndKtuneExtension) {
  const ProblemSpec s = ProblemSpec::load(test::fixtures_dir() / "matmul_T1.json");
  EXPECT_EQ(s.name, "matmul_small");
  ASSERT_EQ(s.parameters.size(), 4u);
  EXPECT_EQ(s.parameters[1].name, "block_y");
  EXPECT_EQ(s.parameters[1].values.size(), 4u);
  EXPECT_EQ(s.parameters[1].default_value->as_int(), 4);
  ASSERT_EQ(s.constraints.size(), 3u);
  EXPECT_EQ(s.constraints[0].expression.names(), (std::vector<std::string>{"block_x", "block_y"}));
  EXPECT_EQ(s.kernel.kernel_name, "matmul");
  EXPECT_EQ(s.kernel.kernel_file.filename(), "matmul.cu");
  EXPECT_EQ(s.kernel.compiler_options, (std::vector<std::string>{"-std=c++17"}));
  ASSERT_EQ(s.kernel.arguments.size(), 4u);
  EXPECT_TRUE(s.kernel.arguments[0].output);
  EXPECT_TRUE(s.kernel.arguments[2].constant_memory);
  EXPECT_EQ(s.kernel.arguments[3].memory_type, MemoryType::scalar);
  EXPECT_EQ(s.kernel.arguments[1].fill_type, FillType::random);
  EXPECT_EQ(s.kernel.arguments[0].dtype, DType::f32);
  EXPECT_EQ(s.ktune.op, "matmul");
  EXPECT_EQ(s.ktune.dtype, "f32");
  ASSERT_TRUE(s.ktune.reference);
  EXPECT_EQ(s.ktune.reference->configuration.at("block_x").as_int(), 16);
  ASSERT_TRUE(s.ktune.tolerance);
  EXPECT_DOUBLE_EQ(s.ktune.tolerance->rtol, 1e-4);
  ASSERT_EQ(s.ktune.shape.size(), 3u);
  EXPECT_EQ(s.ktune.shape[0].bucket.kind, store::BucketKind::pow2);
  EXPECT_EQ(s.ktune.shape[0].bucket.name, s.ktune.shape[0].name);
  EXPECT_EQ(s.ktune.shape[1].bucket.kind, store::BucketKind::multiple);
  EXPECT_EQ(s.ktune.shape[1].bucket.multiple, 64);
}

TEST(Spec, ConstantsAndLaunchGeometry) {
  const ProblemSpec s = ProblemSpec::load(test::fixtures_dir() / "matmul_T1.json");
  const MapScope constants = s.constants({{"N", 2048}});
  EXPECT_EQ(constants.find("N")->as_int(), 2048);
  EXPECT_EQ(constants.find("M")->as_int(), 512);  // default
  EXPECT_EQ(constants.find("ProblemSize")->repr(), "[2048, 512, 1]");
  MapScope config(&constants);
  config.set("block_x", 32);
  config.set("block_y", 4);
  config.set("tile", 2);
  config.set("use_shared", 1);
  const LaunchGeometry g = s.launch_geometry(config);
  EXPECT_EQ(g.block, (std::array<std::int64_t, 3>{32, 4, 1}));
  EXPECT_EQ(g.grid, (std::array<std::int64_t, 3>{32, 128, 1}));  // 2048/(32*2), 512/4
  EXPECT_EQ(g.shared_memory_bytes, 32 * 2 * 4 * 16);
  EXPECT_EQ(s.ktune.flops->evaluate(config).as_int(), 2LL * 2048 * 512 * 256);
  EXPECT_THROW(s.constants({{"Q", 1}}), Error);
}

TEST(Spec, BucketRules) {
  const auto hi = [](std::string_view text, std::int64_t size) {
    return store::bucket_dim(parse_bucket_rule(text, "n"), size).hi;
  };
  EXPECT_EQ(hi("pow2", 1000), 1024);
  EXPECT_EQ(hi("pow2", 1024), 1024);
  EXPECT_EQ(hi("multiple:64", 65), 128);
  EXPECT_EQ(hi("exact", 77), 77);
  EXPECT_EQ(parse_bucket_rule("exact", "n").name, "n");
  EXPECT_THROW(parse_bucket_rule("multiple:0", "n"), Error);
  EXPECT_THROW(parse_bucket_rule("log", "n"), Error);
}

TEST(Spec, ExpressionErrorsNameFileFieldAndPosition) {
  try {
    ProblemSpec::load(test::fixtures_dir() / "bad_expression_T1.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("bad_expression_T1.json: field ConfigurationSpace.Conditions[1].Expression: "
                     "in expression \"tile == 1 or (use_shared == 1\" at position 29: expected "
                     "')'"),
              std::string::npos)
        << m;
  }
}

TEST(Spec, FieldErrorsNameTheField) {
  json j = fixture("matmul_T1.json");
  j["ConfigurationSpace"]["TuningParameters"][2]["Values"] = "[1, 2, 2]";
  EXPECT_NE(error_of(j).find("field ConfigurationSpace.TuningParameters[2].Values: lists 2 twice"),
            std::string::npos)
      << error_of(j);

  j = fixture("matmul_T1.json");
  j["KernelSpecification"]["Arguments"][1]["FillType"] = "Noise";
  EXPECT_NE(error_of(j).find("field KernelSpecification.Arguments[1].FillType: 'Noise'"),
            std::string::npos);

  j = fixture("matmul_T1.json");
  j["KernelSpecification"]["LocalSize"]["Y"] = "block_q";
  EXPECT_NE(error_of(j).find("field KernelSpecification.LocalSize.Y: expression \"block_q\" reads "
                             "'block_q'"),
            std::string::npos)
      << error_of(j);

  j = fixture("matmul_T1.json");
  j["ktune"]["shape"][0]["bucket"] = "log";
  EXPECT_NE(error_of(j).find("field ktune.shape[0].bucket"), std::string::npos);

  j = fixture("matmul_T1.json");
  j.erase("ConfigurationSpace");
  EXPECT_NE(error_of(j).find("field ConfigurationSpace: is missing"), std::string::npos);

  j = fixture("matmul_T1.json");
  j["ktune"]["reference"] = json::object();
  EXPECT_NE(error_of(j).find("field ktune.reference: needs exactly one"), std::string::npos);
}

// Found by the fuzzer (fuzz/corpus/spec/kernel_file_name_too_long): a KernelFile name longer
// than the file system allows made the probe for it throw std::filesystem::filesystem_error, which
// escaped as a crash. Now it is a missing file, reported where the source is read.
TEST(Spec, AKernelFileNameTooLongForTheFileSystemIsNotACrash) {
  json j = fixture("matmul_T1.json");
  j["KernelSpecification"]["KernelFile"] = std::string(5000, 'k') + ".cu";
  const ProblemSpec s = ProblemSpec::parse(j, "spec.json", test::fixtures_dir());
  EXPECT_EQ(s.kernel.kernel_file.filename().string().size(), 5003u);
}

// Without ktune.dtype the cache key's dtype is the output's element type; T1's float vector
// types (float4, half2, double16) name their element type plus a width.
TEST(Spec, DefaultDtypeIsTheOutputsElementType) {
  json j = fixture("matmul_T1.json");
  j["ktune"].erase("dtype");  // the shape variables stay: the conditions read them
  const std::pair<const char*, const char*> cases[] = {
      {"float", "f32"},  {"float4", "f32"}, {"float16", "f32"}, {"half2", "f16"},
      {"double", "f64"}, {"int32", "i32"},  {"uint8", "u8"},    {"bool", "bool"}};
  for (const auto& [type, dtype] : cases) {
    for (auto& a : j["KernelSpecification"]["Arguments"]) a["Type"] = type;
    EXPECT_EQ(ProblemSpec::parse(j, "spec.json", test::fixtures_dir()).ktune.dtype, dtype) << type;
  }
}

// The argument rules are read once, into types: a Type ktune cannot fill is found when a problem
// is made (an OpenCL spec with one is still read and enumerated), and a tolerance is the spec's
// only when it gives one.
TEST(Spec, ArgumentTypesAndToleranceAreParsedOnce) {
  const std::filesystem::path dir = std::filesystem::path(KTUNE_SOURCE_DIR) / "kernels/gemv";
  json j = json::parse(read_file(dir / "gemv.json"));
  const ProblemSpec given = ProblemSpec::parse(j, "gemv.json", dir);
  ASSERT_TRUE(given.ktune.tolerance);
  for (const auto& a : make_problem(given, default_config(given)).args)
    if (a.output) EXPECT_TRUE(a.tolerance) << a.name;

  j["ktune"].erase("tolerance");
  const ProblemSpec untouched = ProblemSpec::parse(j, "gemv.json", dir);
  EXPECT_FALSE(untouched.ktune.tolerance);
  for (const auto& a : make_problem(untouched, default_config(untouched)).args)
    EXPECT_FALSE(a.tolerance) << a.name;  // each output takes its dtype's default

  // CUDA's float4 is four f32 elements an entry; OpenCL's float8 is no type ktune fills.
  j["KernelSpecification"]["Arguments"][0]["Type"] = "float4";
  const ProblemSpec cuda_vector = ProblemSpec::parse(j, "gemv.json", dir);
  ASSERT_TRUE(cuda_vector.kernel.arguments[0].dtype);
  EXPECT_EQ(*cuda_vector.kernel.arguments[0].dtype, DType::f32);
  EXPECT_EQ(cuda_vector.kernel.arguments[0].width, 4);
  j["KernelSpecification"]["Arguments"][0]["Type"] = "float8";
  const ProblemSpec vector_type = ProblemSpec::parse(j, "gemv.json", dir);
  EXPECT_FALSE(vector_type.kernel.arguments[0].dtype);
  try {
    make_problem(vector_type, default_config(vector_type));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Arguments[0].Type: unknown data type 'float8'"),
              std::string::npos)
        << e.what();
  }
}

TEST(Spec, LaunchGeometryCudaCannotLaunchIsRefusedOnce) {
  bench::KernelLaunch l;
  EXPECT_TRUE(set_geometry(l, {{4, 1, 1}, {256, 1, 1}, 1024}));
  EXPECT_EQ(l.grid[0], 4u);
  EXPECT_EQ(l.block[0], 256u);
  EXPECT_EQ(l.dynamic_shared_bytes, 1024u);
  EXPECT_FALSE(set_geometry(l, {{0, 1, 1}, {256, 1, 1}, 0}));
  EXPECT_FALSE(set_geometry(l, {{1, 1, 1}, {2048, 1, 1}, 0}));
  EXPECT_FALSE(set_geometry(l, {{std::int64_t{1} << 31, 1, 1}, {32, 1, 1}, 0}));
}

TEST(Spec, ReadsTheCommunityDedispersionSpec) {
  KTUNE_REQUIRE_DATASETS();
  const ProblemSpec s = ProblemSpec::load(test::dedispersion_dir() / "T1.json");
  EXPECT_EQ(s.name, "dedispersion_milo");
  EXPECT_EQ(s.parameters.size(), 8u);
  EXPECT_EQ(s.constraints.size(), 3u);
  EXPECT_EQ(s.ktune.op, "dedispersion_milo");  // no ktune object: defaults from T1
  const MapScope constants = s.constants();
  EXPECT_EQ(constants.find("ProblemSize")->repr(), "[25000, 2048, 1]");
  MapScope config(&constants);
  config.set("block_size_x", 16);
  config.set("block_size_y", 32);
  config.set("tile_size_x", 2);
  config.set("tile_size_y", 4);
  // ProblemSize over the GridDiv products, rounded up, as Kernel Tuner's T1 reader lays it out;
  // the spec's GlobalSize would give 262144 / 16 / 2 = 8192 blocks, 10x too many.
  const LaunchGeometry g = s.launch_geometry(config);
  EXPECT_EQ(g.grid, (std::array<std::int64_t, 3>{782, 16, 1}));
  EXPECT_EQ(s.launch_geometry(config, GridSource::global_size).grid,
            (std::array<std::int64_t, 3>{262144 / 16 / 2, 262144 / 32 / 4, 1}));
  EXPECT_TRUE(s.kernel.arguments[2].constant_memory);
}

}  // namespace
}  // namespace ktune::tune

namespace ktune::tune {
namespace {

// The shape a kernel's launch implies: the grid and block a trace recorded, read back through the
// spec's expressions (the queue tunes a backlog kernel at the shape the fleet ran, not at the
// spec's default).
TEST(SpecShape, ALaunchGivesTheShapeVariablesItsGridImplies) {
  const ProblemSpec s = ProblemSpec::load(std::filesystem::path(KTUNE_SOURCE_DIR) /
                                          "tests/fixtures/tuning/matmul_T1.json");
  // The default configuration (block 16 x 4, tile 1) at N = 1024, M = 768: grid 64 x 192.
  auto shape = shape_from_launch(s, {64, 192, 1}, {16, 4, 1});
  ASSERT_TRUE(shape);
  EXPECT_EQ(*shape, (std::map<std::string, std::int64_t>{{"K", 256}, {"M", 768}, {"N", 1024}}));
  // Another block: the first configuration that launches it; K, which no grid reads, stays at
  // its default.
  shape = shape_from_launch(s, {100, 30, 1}, {32, 8, 1});
  ASSERT_TRUE(shape);
  EXPECT_EQ(shape->at("N"), 3200);  // 100 blocks of 32 (tile 1)
  EXPECT_EQ(shape->at("M"), 240);
  EXPECT_EQ(shape->at("K"), 256);
  // No configuration has a 7 x 7 block; a grid no shape gives (a z of 2) is no shape either.
  EXPECT_FALSE(shape_from_launch(s, {64, 192, 1}, {7, 7, 1}));
  EXPECT_FALSE(shape_from_launch(s, {64, 192, 2}, {16, 4, 1}));
}

}  // namespace
}  // namespace ktune::tune
