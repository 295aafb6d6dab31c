#include "command.hpp"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "ktune/core/paths.hpp"
#include "ktune/store/store.hpp"

namespace ktune::cli {
namespace {
std::vector<CommandSpec>& registry() {
  static std::vector<CommandSpec> commands;
  return commands;
}

// Levenshtein distance, two rows.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

bool register_command(CommandSpec spec) {
  registry().push_back(std::move(spec));
  return true;
}

const std::vector<CommandSpec>& registered_commands() {
  return registry();
}

CLI::Validator parsed_by(std::function<void(const std::string&)> check) {
  return CLI::Validator(
      [check = std::move(check)](std::string& value) {
        try {
          check(value);
        } catch (const Error& e) {
          std::string what = e.what();
          while (!what.empty() && (what.back() == '.' || what.back() == '\n')) what.pop_back();
          return what;
        }
        return std::string();
      },
      "");
}

CLI::Option* add_output_option(CLI::App& app, std::string& output, const std::string& what) {
  return app.add_option("-o,--output", output, what + " (- for stdout)");
}

bool is_stdout(const std::string& output) {
  return output.empty() || output == "-";
}

void refuse_stdin(const std::string& path, const std::string& what) {
  if (path == "-")
    throw UsageError(fmt::format(
        "'-' (stdin) is read only where a command takes a JSON document (cache put, cache "
        "import); {} is read from its path, so save it to a file and name that.",
        what));
}

void emit(const std::string& text, const std::string& output) {
  if (is_stdout(output))
    std::fwrite(text.data(), 1, text.size(), stdout);
  else
    write_file_atomic(output, text);
}

void add_deprecated_alias(CLI::App& app, const std::string& old_name, const std::string& new_name,
                          std::string& target) {
  app.add_option_function<std::string>(old_name,
                                       [&target, old_name, new_name](const std::string& v) {
                                         std::fprintf(stderr,
                                                      "ktune: %s is deprecated; write %s.\n",
                                                      old_name.c_str(), new_name.c_str());
                                         target = v;
                                       })
      ->group("");
}

void add_deprecated_flag_alias(CLI::App& app, const std::string& old_name,
                               const std::string& new_name, bool& target) {
  app.add_flag_callback(old_name,
                        [&target, old_name, new_name] {
                          std::fprintf(stderr, "ktune: %s is deprecated; write %s.\n",
                                       old_name.c_str(), new_name.c_str());
                          target = true;
                        })
      ->group("");
}

void add_json_flag_for_format(CLI::App& app, std::string& format, const std::string& help) {
  app.add_flag_callback(
      "--json", [&format] { format = "json"; }, help + " (the same as --format json)");
}

std::unique_ptr<store::Store> open_for_listing(const std::string& db) {
  try {
    return store::Store::open(db, store::Access::read_only);
  } catch (const store::NoStoreYet&) {
    return nullptr;
  }
}

std::string store_location(const std::string& db) {
  return store::describe_locator(db);
}

std::optional<std::string> closest_match(const std::string& word,
                                         const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_d = 0;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (!best || d < best_d) {
      best = c;
      best_d = d;
    }
  }
  // A typo: a third of the word at most (reprot -> report: 2 of 6; --fromat -> --format: 2 of 8).
  if (!best || best_d == 0 || best_d > std::max<std::size_t>(2, word.size() / 3)) return {};
  return best;
}

}  // namespace ktune::cli
