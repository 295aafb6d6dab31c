#pragma once
// Test helper: runs the built ktune binary with arguments and captures stdout, stderr and exit
// code.
#include <string>

namespace ktune::test {

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

// `args` is appended to the binary path verbatim (shell syntax); `env` is prefixed ("A=1 B=2").
RunResult run_ktune(const std::string& args, const std::string& env = {});
// The same with stdin read from `stdin_path` instead of /dev/null.
RunResult run_ktune_with_stdin(const std::string& args, const std::string& stdin_path,
                               const std::string& env = {});

}  // namespace ktune::test
