#include "ktune/core/dtype.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "ktune/core/error.hpp"

namespace ktune {
namespace {

TEST(DType, EverySpellingOfATypeReadsAsItsOneName) {
  for (const char* s : {"f16", "float16", "half", "__half", "fp16", "torch.float16", "R_16F"})
    EXPECT_EQ(find_dtype(s), DType::f16) << s;
  for (const char* s : {"bf16", "bfloat16", "torch.bfloat16", "__nv_bfloat16", "R_16BF"})
    EXPECT_EQ(find_dtype(s), DType::bf16) << s;
  for (const char* s : {"f32", "float", "float32", "torch.float32", "R_32F"})
    EXPECT_EQ(find_dtype(s), DType::f32) << s;
  EXPECT_EQ(find_dtype("uint32"), DType::u32);
  EXPECT_EQ(find_dtype("int"), DType::i32);
  EXPECT_EQ(find_dtype("float4"), std::nullopt);
  EXPECT_STREQ(to_string(DType::bf16), "bf16");
  EXPECT_EQ(dtype_bytes(DType::u16), 2u);
}

TEST(DType, AnUnknownNameIsOneSentenceListingTheNames) {
  try {
    parse_dtype("quad");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'quad'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("bf16"), std::string::npos);
  }
}

TEST(DType, CacheKeysOfEveryProducerMeetInOneSpelling) {
  EXPECT_EQ(canonical_dtype_key("bfloat16"), "bf16");
  EXPECT_EQ(canonical_dtype_key("torch.bfloat16,torch.bfloat16"), "bf16,bf16");
  EXPECT_EQ(canonical_dtype_key("float16, float16,float32"), "f16,f16,f32");
  EXPECT_EQ(canonical_dtype_key("TF32"), "tf32");
  EXPECT_EQ(canonical_dtype_key("torch.float8_e4m3fn"), "float8_e4m3fn");
  EXPECT_EQ(canonical_dtype_key(""), "");
}

TEST(DType, CudaVectorTypesAreWidthsOfAnElementType) {
  const auto width = [](std::string_view name) {
    const auto v = find_vector_type(name);
    return v ? std::pair<std::string, int>{to_string(v->element), v->width}
             : std::pair<std::string, int>{"none", 0};
  };
  EXPECT_EQ(width("double3"), (std::pair<std::string, int>{"f64", 3}));
  EXPECT_EQ(width("float4"), (std::pair<std::string, int>{"f32", 4}));
  EXPECT_EQ(width("float2"), (std::pair<std::string, int>{"f32", 2}));
  EXPECT_EQ(width("int2"), (std::pair<std::string, int>{"i32", 2}));
  EXPECT_EQ(width("uint4"), (std::pair<std::string, int>{"u32", 4}));
  EXPECT_EQ(width("uchar1"), (std::pair<std::string, int>{"u8", 1}));
  EXPECT_EQ(width("half2"), (std::pair<std::string, int>{"f16", 2}));
  // Plain element types are width 1, and a trailing width in their own name is not a vector.
  EXPECT_EQ(width("float16"), (std::pair<std::string, int>{"f16", 1}));
  EXPECT_EQ(width("int32"), (std::pair<std::string, int>{"i32", 1}));
  EXPECT_EQ(width("float8"), (std::pair<std::string, int>{"none", 0}));  // not a CUDA type
  EXPECT_EQ(width("quad4"), (std::pair<std::string, int>{"none", 0}));
  EXPECT_EQ(width("4"), (std::pair<std::string, int>{"none", 0}));
}

}  // namespace
}  // namespace ktune
