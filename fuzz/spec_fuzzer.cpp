// tune::ProblemSpec::parse on JSON: the T1 reader and ktune's extensions beside it. A bad spec
// must end in ktune::Error; anything else escaping, or a sanitizer report, is a finding.
#include <filesystem>

#include "json_input.hpp"
#include "ktune/core/error.hpp"
#include "ktune/spec/spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = ktune::fuzz::json_input(data, size);
  if (!j) return 0;
  try {
    // Relative kernel-file paths resolve here: a directory with nothing in it.
    static const std::filesystem::path empty_dir = [] {
      auto p = std::filesystem::temp_directory_path() / "ktune-fuzz-spec-empty";
      std::filesystem::create_directories(p);
      return p;
    }();
    const auto spec = ktune::tune::ProblemSpec::parse(*j, "fuzz.json", empty_dir);
    (void)spec.constants();
  } catch (const ktune::Error&) {
  }
  return 0;
}
