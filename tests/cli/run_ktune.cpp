#include "run_ktune.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ktune::test {

RunResult run_ktune(const std::string& args, const std::string& env) {
  return run_ktune_with_stdin(args, "/dev/null", env);
}

RunResult run_ktune_with_stdin(const std::string& args, const std::string& stdin_path,
                               const std::string& env) {
  static std::atomic<int> counter{0};
  const auto base = std::filesystem::temp_directory_path() /
                    ("ktune-cli-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  const std::string out = base.string() + ".out", err = base.string() + ".err";
  const std::string cmd =
      env + " " KTUNE_EXE " " + args + " >" + out + " 2>" + err + " <" + stdin_path;
  const int status = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

}  // namespace ktune::test
