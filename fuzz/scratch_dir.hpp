#pragma once
// One scratch directory per fuzzing process, in memory where there is one, removed at exit: the
// trace fuzzers write each input to a file there, since their readers open files.
#include <unistd.h>

#include <filesystem>
#include <string>

namespace ktune::fuzz {

inline const std::filesystem::path& scratch_dir(const std::string& name) {
  struct ScratchDir {
    std::filesystem::path path;
    explicit ScratchDir(const std::string& name) {
      namespace fs = std::filesystem;
      const fs::path base =
          fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
      path = base / ("ktune-fuzz-" + name + "-" + std::to_string(::getpid()));
      fs::create_directories(path);
    }
    ~ScratchDir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const ScratchDir scratch(name);
  return scratch.path;
}

}  // namespace ktune::fuzz
