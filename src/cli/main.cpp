// ktune: profile -> tune -> cache -> guard. Parses the command line, runs one subcommand, and turns
// a ktune::Error into one sentence on stderr and exit code 1 (usage errors: 2).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

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

  // Global options are read anywhere on the line: a subcommand hands what it does not know to
  // its parent (`ktune cache ls --db s.db`, as git and kubectl take them).
  const auto every = [](CLI::App*) { return true; };
  for (CLI::App* sub : app.get_subcommands(every)) {
    sub->fallthrough();
    for (CLI::App* nested : sub->get_subcommands(every)) nested->fallthrough();
  }

  // The subcommand chain the line names, walked before CLI11 parses it, so a mistyped command or
  // flag gets a "did you mean" from the names of the command it was given to.
  std::vector<CLI::App*> chain = {&app};
  std::string command;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (!arg.empty() && arg[0] == '-') {
      if (arg.find('=') != std::string::npos) continue;
      for (auto it = chain.rbegin(); it != chain.rend(); ++it)
        if (const CLI::Option* o = (*it)->get_option_no_throw(arg)) {
          if (o->get_type_size_max() > 0 && o->get_positional() == false) ++i;  // its value
          break;
        }
      continue;
    }
    CLI::App* current = chain.back();
    const auto subs = current->get_subcommands(every);
    if (subs.empty()) continue;  // a positional argument of the command
    const auto found =
        std::find_if(subs.begin(), subs.end(), [&](CLI::App* s) { return s->get_name() == arg; });
    if (found != subs.end()) {
      chain.push_back(*found);
      command += (command.empty() ? "" : " ") + arg;
      continue;
    }
    std::vector<std::string> names;
    for (CLI::App* s : subs) names.push_back(s->get_name());
    const auto guess = closest_match(arg, names);
    std::fprintf(stderr, "ktune: unknown command '%s%s%s'%s; run 'ktune%s --help' for the list.\n",
                 command.c_str(), command.empty() ? "" : " ", arg.c_str(),
                 guess ? fmt::format(" (did you mean '{}'?)", *guess).c_str() : "",
                 command.empty() ? "" : (" " + command).c_str());
    return kExitUsage;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string what = e.what();
    while (!what.empty() && (what.back() == '.' || what.back() == '\n')) what.pop_back();
    // CLI11 names the flag before a value check's message, which names it again.
    if (const auto colon = what.find(": "); colon != std::string::npos &&
                                            what.rfind("--", 0) == 0 &&
                                            what.compare(colon + 2, colon, what, 0, colon) == 0)
      what.erase(0, colon + 2);
    // A flag that no command of the chain knows: name the closest one they do.
    std::string hint;
    for (int i = 1; i < argc && hint.empty(); ++i) {
      std::string arg = argv[i];
      if (arg == "--") break;
      if (arg.rfind("--", 0) != 0) continue;
      arg = arg.substr(0, arg.find('='));
      const bool known = std::any_of(chain.begin(), chain.end(), [&](CLI::App* a) {
        return a->get_option_no_throw(arg) != nullptr;
      });
      if (known) continue;
      std::vector<std::string> names;
      for (CLI::App* a : chain)
        for (const CLI::Option* o : a->get_options())
          if (!o->get_group().empty())
            for (const auto& l : o->get_lnames()) names.push_back("--" + l);
      if (const auto guess = closest_match(arg, names))
        hint = fmt::format(" (did you mean {}?)", *guess);
    }
    std::fprintf(stderr, "ktune: %s%s; run 'ktune%s --help' for the options.\n", what.c_str(),
                 hint.c_str(), command.empty() ? "" : (" " + command).c_str());
    return kExitUsage;
  }

  // An empty --db (or KTUNE_DB set from an unset variable) silently used the default store.
  const char* env_db = std::getenv("KTUNE_DB");
  if (globals.db.empty() && (app.get_option("--db")->count() > 0 || (env_db && !*env_db))) {
    std::fprintf(stderr,
                 "ktune: %s is empty; give the store's path or postgresql:// URL, or leave it "
                 "out%s for the default store.\n",
                 app.get_option("--db")->count() > 0 ? "--db" : "KTUNE_DB",
                 app.get_option("--db")->count() > 0 ? "" : " (unset KTUNE_DB)");
    return kExitUsage;
  }
  ktune::set_allowed_folders({globals.allow_paths.begin(), globals.allow_paths.end()});

  try {
    for (auto& [sub, run] : runners)
      if (sub->parsed()) return run();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "ktune: %s\n", e.what());
    return kExitUsage;
  } catch (const ktune::Error& e) {
    std::fprintf(stderr, "ktune: %s\n", e.what());
    return kExitFailed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ktune: internal error: %s\n", e.what());
    return kExitFailed;
  }
  return 0;
}
