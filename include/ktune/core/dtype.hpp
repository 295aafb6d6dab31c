#pragma once
// The one vocabulary of element types. Every name ktune writes (cache keys, JSON, tune commands)
// is a canonical short name ("f16", "bf16", "f32", "i32"); every name it reads may be any spelling
// a producer uses ("float16", "half", "__half", "torch.float16", cuBLASLt's "R_16F"), and is
// turned into the canonical one here, so a key written by one producer is found by another.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ktune {

enum class DType { f64, f32, f16, bf16, i64, i32, i16, i8, u64, u32, u16, u8 };

// The canonical short name: "f64", "f32", "f16", "bf16", "i64", ..., "u8".
const char* to_string(DType t);
std::size_t dtype_bytes(DType t);
bool is_floating(DType t);

// Any accepted spelling (canonical, C/CUDA, NumPy/PyTorch, cuBLASLt's R_*); nullopt if unknown.
std::optional<DType> find_dtype(std::string_view name);
// The same, throwing ktune::Error that lists the canonical names when `name` is unknown.
DType parse_dtype(std::string_view name);

// A CUDA vector type ("float4", "double3", "int2", "uint4", "half2"): `width` elements of
// `element` side by side, as a buffer of them is laid out. A plain element type reads as width 1.
struct VectorType {
  DType element;
  int width;
};
std::optional<VectorType> find_vector_type(std::string_view name);

// A cache key's dtype: one name, or several joined by ',' ("f16,f16,f32"). Each part that names
// an element type becomes its canonical name; "tf32" (float32 data multiplied in TF32) is a
// name of its own; other parts are kept as written, lower-cased and trimmed.
std::string canonical_dtype_key(std::string_view key);

}  // namespace ktune
