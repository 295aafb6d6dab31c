#pragma once
// CUPTI results, named once. CUPTI is called only by the injected tracer (src/trace: injection.cpp
// and the counter tier), which must never throw into the program it is injected into and must
// not load the rest of ktune_cuda (NVRTC) there. So CUPTI has no throwing checked call: the
// tracer's one checked call, cupti_ok in injection.cpp, prints "WHAT failed: NAME" and returns
// false, and the counter tier turns itself off with the same name. Header-only for that reason.
#include <cupti.h>

namespace ktune::cuda {

// "CUPTI_ERROR_NOT_INITIALIZED"; "unknown CUPTI error" when CUPTI cannot name it.
inline const char* cupti_result_name(CUptiResult r) noexcept {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) return "unknown CUPTI error";
  return s;
}

}  // namespace ktune::cuda
