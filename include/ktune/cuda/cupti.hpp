#pragma once
// CUPTI checked calls, for code that links CUPTI. Nothing includes this yet: the tracer and the
// counter tier (src/trace) still name CUPTI results with their own helpers, which never throw into
// the host program; they are to move onto the _WARN twin here.
#include <cupti.h>

#include "ktune/cuda/check.hpp"

namespace ktune::cuda {

inline const char* cupti_result_name(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) return "CUPTI_ERROR_UNKNOWN";
  return s;
}
inline void check_cupti(CUptiResult r, const char* call, const char* file, int line) {
  if (r != CUPTI_SUCCESS) throw_call_failed(file, line, call, cupti_result_name(r), r);
}
inline bool warn_cupti(CUptiResult r, const char* call, const char* file, int line) {
  if (r != CUPTI_SUCCESS) warn_call_failed(file, line, call, cupti_result_name(r), r);
  return r == CUPTI_SUCCESS;
}

}  // namespace ktune::cuda

#define KTUNE_CUPTI(call) ::ktune::cuda::check_cupti((call), #call, __FILE__, __LINE__)
#define KTUNE_CUPTI_WARN(call) ::ktune::cuda::warn_cupti((call), #call, __FILE__, __LINE__)
