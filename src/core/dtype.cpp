#include "ktune/core/dtype.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune {
namespace {

struct DTypeInfo {
  DType type;
  const char* name;  // canonical
  std::size_t bytes;
  bool floating;
  // Other spellings: C and CUDA types, NumPy/PyTorch names (torch.X reads as X), cuBLASLt's R_*.
  std::initializer_list<std::string_view> aliases;
};

const DTypeInfo kTypes[] = {
    {DType::f64, "f64", 8, true, {"float64", "double", "fp64", "R_64F"}},
    {DType::f32, "f32", 4, true, {"float32", "float", "fp32", "R_32F"}},
    {DType::f16, "f16", 2, true, {"float16", "half", "fp16", "__half", "R_16F"}},
    {DType::bf16, "bf16", 2, true, {"bfloat16", "__nv_bfloat16", "R_16BF"}},
    {DType::i64, "i64", 8, false, {"int64", "int64_t", "long", "long long", "R_64I"}},
    {DType::i32, "i32", 4, false, {"int32", "int", "int32_t", "R_32I"}},
    {DType::i16, "i16", 2, false, {"int16", "short", "int16_t", "R_16I"}},
    {DType::i8, "i8", 1, false, {"int8", "char", "signed char", "int8_t", "R_8I"}},
    {DType::u64, "u64", 8, false, {"uint64", "uint64_t", "unsigned long long", "R_64U"}},
    {DType::u32, "u32", 4, false, {"uint32", "unsigned int", "unsigned", "uint32_t", "R_32U"}},
    {DType::u16, "u16", 2, false, {"uint16", "unsigned short", "uint16_t", "R_16U"}},
    {DType::u8, "u8", 1, false, {"uint8", "unsigned char", "uint8_t", "R_8U"}},
};

const DTypeInfo& info(DType t) {
  for (const auto& i : kTypes)
    if (i.type == t) return i;
  return kTypes[1];
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

const char* to_string(DType t) {
  return info(t).name;
}

std::size_t dtype_bytes(DType t) {
  return info(t).bytes;
}

bool is_floating(DType t) {
  return info(t).floating;
}

std::optional<DType> find_dtype(std::string_view name) {
  name = trim(name);
  if (name.rfind("torch.", 0) == 0 || name.rfind("numpy.", 0) == 0) name.remove_prefix(6);
  for (const auto& i : kTypes) {
    if (name == i.name) return i.type;
    for (std::string_view a : i.aliases)
      if (name == a) return i.type;
  }
  return std::nullopt;
}

std::optional<VectorType> find_vector_type(std::string_view name) {
  if (const auto t = find_dtype(name)) return VectorType{*t, 1};
  // CUDA's vector types: an element name, then the width 1 to 4 (vector_types.h, cuda_fp16.h).
  static constexpr std::pair<std::string_view, DType> kBases[] = {
      {"char", DType::i8},       {"uchar", DType::u8},   {"short", DType::i16},
      {"ushort", DType::u16},    {"int", DType::i32},    {"uint", DType::u32},
      {"long", DType::i64},      {"ulong", DType::u64},  {"longlong", DType::i64},
      {"ulonglong", DType::u64}, {"float", DType::f32},  {"double", DType::f64},
      {"half", DType::f16},      {"__half", DType::f16}, {"__nv_bfloat16", DType::bf16}};
  name = trim(name);
  if (name.size() < 2) return std::nullopt;
  const char last = name.back();
  if (last < '1' || last > '4') return std::nullopt;
  const std::string_view base = name.substr(0, name.size() - 1);
  for (const auto& [spelling, type] : kBases)
    if (base == spelling) return VectorType{type, last - '0'};
  return std::nullopt;
}

DType parse_dtype(std::string_view name) {
  if (const auto t = find_dtype(name)) return *t;
  std::string names;
  for (const auto& i : kTypes) names += fmt::format("{}{}", names.empty() ? "" : ", ", i.name);
  throw Error(fmt::format("unknown data type '{}'; use one of {}.", name, names));
}

std::string canonical_dtype_key(std::string_view key) {
  std::string out;
  for (std::size_t start = 0; start <= key.size();) {
    const std::size_t comma = std::min(key.find(',', start), key.size());
    std::string_view part = trim(key.substr(start, comma - start));
    if (part.rfind("torch.", 0) == 0) part.remove_prefix(6);
    if (!out.empty() || start > 0) out += ',';
    if (const auto t = find_dtype(part)) {
      out += to_string(*t);
    } else {
      std::string lower(part);
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      out += lower;
    }
    start = comma + 1;
  }
  return out;
}

}  // namespace ktune
