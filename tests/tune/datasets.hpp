#pragma once
// Where the recorded tuning spaces are: $KTUNE_DATASETS, else shared/datasets beside the clone.
// Missing data skips the test locally but fails it under CI (the CI env var is set).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace ktune::test {

inline std::filesystem::path datasets_dir() {
  if (const char* d = std::getenv("KTUNE_DATASETS"); d && *d) return d;
  return std::filesystem::path(KTUNE_SOURCE_DIR) / ".." / "shared" / "datasets";
}

inline std::filesystem::path dedispersion_dir() {
  return datasets_dir() / "tuning" / "dedispersion_milo";
}

inline std::filesystem::path fixtures_dir() {
  return std::filesystem::path(KTUNE_SOURCE_DIR) / "tests" / "fixtures" / "tuning";
}

}  // namespace ktune::test

// Skips (locally) or fails (CI) when the dedispersion spaces are not there.
#define KTUNE_REQUIRE_DATASETS()                                                                \
  do {                                                                                          \
    if (!std::filesystem::exists(::ktune::test::dedispersion_dir() / "T1.json")) {              \
      if (std::getenv("CI")) FAIL() << "datasets missing at " << ::ktune::test::datasets_dir(); \
      GTEST_SKIP() << "datasets missing at " << ::ktune::test::datasets_dir()                   \
                   << "; set KTUNE_DATASETS";                                                   \
    }                                                                                           \
  } while (0)
