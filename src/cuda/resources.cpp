#include "ktune/cuda/resources.hpp"

#include <mutex>
#include <set>

namespace ktune::cuda {

namespace {
// One extra retain per device, held until the process exits (as the CUDA runtime does): a primary
// context released to zero is destroyed, and process-wide objects made in it (the fill kernels'
// module, cached functions) would dangle in the next PrimaryContext of the same device.
void keep_alive_for_process(CUdevice dev) {
  static std::mutex mutex;
  static std::set<CUdevice> kept;
  std::lock_guard<std::mutex> lock(mutex);
  if (!kept.insert(dev).second) return;
  CUcontext ctx = nullptr;
  KTUNE_CU(driver().cuDevicePrimaryCtxRetain(&ctx, dev));
}
}  // namespace

PrimaryContext::PrimaryContext(int ordinal) {
  const auto& d = driver();
  KTUNE_CU(d.cuDeviceGet(&dev_, ordinal));
  KTUNE_CU(d.cuDevicePrimaryCtxRetain(&ctx_, dev_));
  keep_alive_for_process(dev_);
  make_current();
}

PrimaryContext::~PrimaryContext() {
  if (ctx_) KTUNE_CU_RELEASE(driver().cuDevicePrimaryCtxRelease(dev_));
}

void PrimaryContext::make_current() const {
  KTUNE_CU(driver().cuCtxSetCurrent(ctx_));
}

int PrimaryContext::attribute(CUdevice_attribute attr) const {
  int v = 0;
  KTUNE_CU(driver().cuDeviceGetAttribute(&v, attr, dev_));
  return v;
}

void StreamDeleter::operator()(CUstream s) const {
  KTUNE_CU_RELEASE(driver().cuStreamDestroy(s));
}
void EventDeleter::operator()(CUevent e) const {
  KTUNE_CU_RELEASE(driver().cuEventDestroy(e));
}
void ModuleDeleter::operator()(CUmodule m) const {
  KTUNE_CU_RELEASE(driver().cuModuleUnload(m));
}
void GraphExecDeleter::operator()(CUgraphExec g) const {
  KTUNE_CU_RELEASE(driver().cuGraphExecDestroy(g));
}

namespace {
CUstream make_stream() {
  CUstream s = nullptr;
  KTUNE_CU(driver().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  return s;
}
CUevent make_event() {
  CUevent e = nullptr;
  KTUNE_CU(driver().cuEventCreate(&e, CU_EVENT_DEFAULT));
  return e;
}
CUmodule load_module(std::string_view image) {
  CUmodule m = nullptr;
  // The driver reads the image up to its own size header; std::string keeps a trailing NUL for PTX.
  const std::string copy(image);
  KTUNE_CU(driver().cuModuleLoadData(&m, copy.data()));
  return m;
}
}  // namespace

Stream::Stream() : Owned(make_stream()) {}
void Stream::synchronize() const {
  KTUNE_CU(driver().cuStreamSynchronize(get()));
}

Event::Event() : Owned(make_event()) {}
void Event::record(CUstream s) const {
  KTUNE_CU(driver().cuEventRecord(get(), s));
}

float elapsed_ms(const Event& start, const Event& stop) {
  KTUNE_CU(driver().cuEventSynchronize(stop.get()));
  float ms = 0;
  KTUNE_CU(driver().cuEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

Module::Module(std::string_view image) : Owned(load_module(image)) {}

CUfunction Module::function(const std::string& name) const {
  CUfunction f = nullptr;
  KTUNE_CU(driver().cuModuleGetFunction(&f, get(), name.c_str()));
  return f;
}

void GraphExec::launch(CUstream s) const {
  KTUNE_CU(driver().cuGraphLaunch(get(), s));
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes_ > 0) KTUNE_CU(driver().cuMemAlloc(&ptr_, bytes_));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) KTUNE_CU_RELEASE(driver().cuMemFree(ptr_));
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) KTUNE_CU_RELEASE(driver().cuMemFree(ptr_));
    ptr_ = std::exchange(o.ptr_, 0);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

}  // namespace ktune::cuda
