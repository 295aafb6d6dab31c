#pragma once
// RAII owners for driver-API objects. Constructors throw ktune::Error (via KTUNE_CU); destructors
// never throw (KTUNE_CU_RELEASE: a warning, none when the context is lost). All of them need a
// current context: create a PrimaryContext first.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "ktune/cuda/driver.hpp"

namespace ktune::cuda {

// Retains the device's primary context (the one the CUDA runtime, cuBLASLt and PyTorch share) and
// makes it current on the calling thread. The context then lives until the process exits, so
// modules and functions cached process-wide stay valid across PrimaryContext objects.
class PrimaryContext {
 public:
  explicit PrimaryContext(int ordinal = 0);
  ~PrimaryContext();
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  void make_current() const;
  CUcontext get() const { return ctx_; }
  CUdevice device() const { return dev_; }
  int attribute(CUdevice_attribute attr) const;

 private:
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
};

template <class Handle, class Deleter>
class Owned {
 public:
  Owned() = default;
  explicit Owned(Handle h) : h_(h) {}
  ~Owned() { reset(); }
  Owned(Owned&& o) noexcept : h_(std::exchange(o.h_, Handle{})) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, Handle{});
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Handle get() const { return h_; }
  void reset() {
    if (h_) Deleter{}(h_);
    h_ = Handle{};
  }

 private:
  Handle h_{};
};

struct StreamDeleter {
  void operator()(CUstream s) const;
};
struct EventDeleter {
  void operator()(CUevent e) const;
};
struct ModuleDeleter {
  void operator()(CUmodule m) const;
};
struct GraphExecDeleter {
  void operator()(CUgraphExec g) const;
};

class Stream : public Owned<CUstream, StreamDeleter> {
 public:
  Stream();  // non-blocking with respect to the legacy default stream
  void synchronize() const;
};

class Event : public Owned<CUevent, EventDeleter> {
 public:
  Event();  // timing-capable
  void record(CUstream s) const;
};

// Milliseconds between two recorded events; waits for `stop`.
float elapsed_ms(const Event& start, const Event& stop);

class Module : public Owned<CUmodule, ModuleDeleter> {
 public:
  Module() = default;
  explicit Module(std::string_view image);  // cubin or PTX
  CUfunction function(const std::string& name) const;
};

class GraphExec : public Owned<CUgraphExec, GraphExecDeleter> {
 public:
  using Owned::Owned;
  void launch(CUstream s) const;
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, 0)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  CUdeviceptr get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const {
    return reinterpret_cast<T*>(ptr_);
  }

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace ktune::cuda
