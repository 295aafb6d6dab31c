// tune::parse_t4: the T4 tuning-results reader (replay input), and the streaming reader of T4
// files (for_each_t4_record: gzip or plain, bounded between records and in inflation ratio) on the
// same bytes as a file. A malformed file must end in ktune::Error; anything else escaping, a hang,
// or a sanitizer report is a finding.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "json_input.hpp"
#include "ktune/core/error.hpp"
#include "ktune/tune/t4.hpp"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (const auto j = ktune::fuzz::json_input(data, size)) {
    try {
      (void)ktune::tune::parse_t4(*j, "fuzz_T4.json");
    } catch (const ktune::Error&) {
    }
  }
  static const fs::path file = [] {
    const fs::path base =
        fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    return base / ("ktune-fuzz-t4-" + std::to_string(::getpid()) + ".json.gz");
  }();
  if (FILE* f = std::fopen(file.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  try {
    (void)ktune::tune::for_each_t4_record(file, [](ktune::tune::T4Record&&, std::size_t) {});
  } catch (const ktune::Error&) {
  }
  return 0;
}
