#include "process_context.hpp"

#include <map>
#include <memory>
#include <mutex>

#include "ktune/cuda/resources.hpp"

namespace ktune::bench::detail {

void retain_primary_context_for_process(int ordinal) {
  // Function-local statics are destroyed in the reverse order of their construction, so this map,
  // built before the first fill_random of the process, is destroyed after fill_random's module.
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<cuda::PrimaryContext>> kept;
  const std::lock_guard<std::mutex> lock(mutex);
  if (!kept.count(ordinal)) kept.emplace(ordinal, std::make_unique<cuda::PrimaryContext>(ordinal));
}

}  // namespace ktune::bench::detail
