#pragma once
// Every backend test runs on both backends. SQLite: a fresh file in a fresh temp dir. PostgreSQL:
// a fresh schema in the server named by KTUNE_TEST_PG_URL (scripts/test.sh starts one), selected
// with libpq's search_path option, so parallel ctest processes never see each other's tables.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace ktune::test {

enum class BackendKind { sqlite, postgres };

std::string backend_name(const ::testing::TestParamInfo<BackendKind>& info);

// A scratch store location per test. For PostgreSQL without a server: skips locally, fails when
// $CI is set (the CI script always provides one).
class StoreTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override;
  void TearDown() override;
  // URL (or path) of the scratch store; the same one on every call within a test.
  const std::string& url() const { return url_; }
  std::filesystem::path dir() const { return dir_; }

 private:
  std::string url_, schema_;
  std::filesystem::path dir_;
};

#define KTUNE_BOTH_BACKENDS(Suite)                                                                 \
  INSTANTIATE_TEST_SUITE_P(                                                                        \
      Backends, Suite,                                                                             \
      ::testing::Values(::ktune::test::BackendKind::sqlite, ::ktune::test::BackendKind::postgres), \
      ::ktune::test::backend_name)

}  // namespace ktune::test
