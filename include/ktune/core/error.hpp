#pragma once
// ktune's one exception type. Its message is a complete sentence for the user: what was wrong,
// where (file, field, flag) and how to fix it. The CLI prints it as is and exits non-zero.
#include <stdexcept>
#include <string>

namespace ktune {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The GPU (or its driver) is not there: GPU commands fail with this one sentence on a CPU machine.
class NoGpuError : public Error {
 public:
  using Error::Error;
};

// The machine failed the work, not its input: a full disk, a file system that refused a write.
// The same work may succeed later or elsewhere, so a queued job is retried rather than failed.
class EnvironmentError : public Error {
 public:
  using Error::Error;
};

}  // namespace ktune
