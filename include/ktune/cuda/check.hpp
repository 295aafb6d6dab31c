#pragma once
// The shared shape of every checked vendor call: "file:line: CALL failed: NAME (code)[: detail]".
// Each vendor header (driver.hpp, nvrtc.hpp, nvml.hpp, cublaslt.hpp) defines one macro that throws
// ktune::Error and a *_WARN twin that only logs, for destructors. CUPTI is the exception: only the
// tracer calls it, and it never throws (cupti.hpp).
#include <string_view>

namespace ktune::cuda {

[[noreturn]] void throw_call_failed(const char* file, int line, std::string_view call,
                                    std::string_view error_name, long long code,
                                    std::string_view detail = {});
void warn_call_failed(const char* file, int line, std::string_view call,
                      std::string_view error_name, long long code);

}  // namespace ktune::cuda
