#include "ktune/cuda/cublaslt.hpp"

#include <dlfcn.h>

#include <string>

#include <fmt/format.h>

#include "ktune/core/error.hpp"

#define KTUNE_STR(x) #x
#define KTUNE_XSTR(x) KTUNE_STR(x)

namespace ktune::cuda {
namespace {

const CublasLtApi& load() {
  static const CublasLtApi api = [] {
    const std::string soname = fmt::format("libcublasLt.so.{}", CUBLAS_VER_MAJOR);
    void* lib = ::dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      lib = ::dlopen((std::string(KTUNE_CUDA_LIBRARY_DIR) + "/" + soname).c_str(),
                     RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      throw Error(
          fmt::format("cannot load {} (cuBLASLt, part of the CUDA toolkit): {}; install the "
                      "toolkit or add its lib64 folder to LD_LIBRARY_PATH.",
                      soname, ::dlerror()));
    CublasLtApi a;
#define KTUNE_CUBLASLT_LOAD(fn)                                                                    \
  a.fn = reinterpret_cast<decltype(a.fn)>(::dlsym(lib, KTUNE_XSTR(fn)));                           \
  if (!a.fn)                                                                                       \
    throw Error(fmt::format("{} lacks {}; install a CUDA toolkit of version {} or newer.", soname, \
                            KTUNE_XSTR(fn), CUBLAS_VER_MAJOR));
    KTUNE_CUBLASLT_FUNCTIONS(KTUNE_CUBLASLT_LOAD)
#undef KTUNE_CUBLASLT_LOAD
    return a;
  }();
  return api;
}

const char* status_name(cublasStatus_t s) {
  return cublaslt().cublasLtGetStatusName(s);
}

}  // namespace

const CublasLtApi& cublaslt() {
  return load();
}

void check_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) throw_call_failed(file, line, call, status_name(s), s);
}

bool warn_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) warn_call_failed(file, line, call, status_name(s), s);
  return s == CUBLAS_STATUS_SUCCESS;
}

}  // namespace ktune::cuda
