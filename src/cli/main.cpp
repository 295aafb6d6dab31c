// ktune: profile -> tune -> cache -> guard. Parses the command line, runs one subcommand, and turns
// a ktune::Error into one sentence on stderr and exit code 1 (usage errors: 2).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include <fmt/format.h>

#include "command.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/core/version.hpp"

int main(int argc, char** argv) {
  using namespace ktune::cli;
  CLI::App app{
      "ktune: finds a workload's slow GPU kernels, tunes them, caches the winners and "
      "guards them against regressions.",
      "ktune"};
  app.set_version_flag("--version",
                       fmt::format("ktune {} ({})", ktune::version(), ktune::git_commit()));
  app.require_subcommand(1);

  GlobalOptions globals;
  app.add_option("--db", globals.db,
                 "Store: a SQLite file path or postgresql://user@host/db (default: the embedded "
                 "store in the data directory)")
      ->envname("KTUNE_DB");
  app.add_option("--device", globals.device, "CUDA device ordinal")->envname("KTUNE_DEVICE");
  app.add_option("--allow-path", globals.allow_paths,
                 "A folder whose files a spec may name besides its own folder (repeatable; "
                 "KTUNE_ALLOW_PATH takes a ':'-separated list)")
      ->envname("KTUNE_ALLOW_PATH")
      ->delimiter(':');

  std::vector<CommandSpec> specs = registered_commands();
  std::sort(specs.begin(), specs.end(),
            [](const CommandSpec& a, const CommandSpec& b) { return a.order < b.order; });
  std::map<CLI::App*, Runner> runners;
  for (const auto& spec : specs) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.summary);
    runners[sub] = spec.setup(*sub, globals);
  }

  // Name a mistyped command instead of CLI11's generic "A subcommand is required".
  std::string command;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--db" || arg == "--device" || arg == "--allow-path") {
      ++i;
      continue;
    }
    if (arg.empty() || arg[0] == '-') continue;
    const bool known = std::any_of(specs.begin(), specs.end(),
                                   [&](const CommandSpec& s) { return s.name == arg; });
    if (!known) {
      std::fprintf(stderr, "ktune: unknown command '%s'; run 'ktune --help' for the list.\n",
                   arg.c_str());
      return 2;
    }
    command = arg;
    break;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string what = e.what();
    while (!what.empty() && (what.back() == '.' || what.back() == '\n')) what.pop_back();
    std::fprintf(stderr, "ktune: %s; run 'ktune%s --help' for the options.\n", what.c_str(),
                 command.empty() ? "" : (" " + command).c_str());
    return 2;
  }

  // An empty --db (or KTUNE_DB set from an unset variable) silently used the default store.
  const char* env_db = std::getenv("KTUNE_DB");
  if (globals.db.empty() && (app.get_option("--db")->count() > 0 || (env_db && !*env_db))) {
    std::fprintf(stderr,
                 "ktune: %s is empty; give the store's path or postgresql:// URL, or leave it "
                 "out%s for the default store.\n",
                 app.get_option("--db")->count() > 0 ? "--db" : "KTUNE_DB",
                 app.get_option("--db")->count() > 0 ? "" : " (unset KTUNE_DB)");
    return 2;
  }
  ktune::set_allowed_folders({globals.allow_paths.begin(), globals.allow_paths.end()});

  try {
    for (auto& [sub, run] : runners)
      if (sub->parsed()) return run();
  } catch (const ktune::Error& e) {
    std::fprintf(stderr, "ktune: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ktune: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
