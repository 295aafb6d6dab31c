// ktune run [--db URL] [--no-field-trial] [--json] -- CMD ARGS...: runs any program that calls
// cuBLAS or cuBLASLt (PyTorch, JAX, a C++ service) with the cached GEMM winners of this GPU routed
// where the program calls the library: libktune_route.so is preloaded and handed the winners as a
// table; a call whose exact descriptor has a winner runs it, every other call passes through.
// Each routed winner is first tried against the call's own algorithm inside the program (field
// trial, GPU time); a winner slower there is demoted, and the store learns it, so the next run
// keeps the default. `--write-table FILE` writes the table and prints the environment a fleet's
// launcher sets instead. Exit code: the program's (0/1/2 for ktune's own failures before it ran).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/core/subprocess.hpp"
#include "ktune/core/text.hpp"
#include "ktune/route/router.hpp"
#include "ktune/route/table.hpp"
#include "ktune/runtime/environment.hpp"
#include "ktune/store/store.hpp"
#include "print_json.hpp"

namespace ktune::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kRunSchemaVersion = 1;  // of ktune run --json

struct Options {
  std::vector<std::string> cmd;
  bool json = false, no_field_trial = false;
  std::string write_table;
};

// The winners of this GPU in the store, as the router's table.
route::RouteTable table_of(const GlobalOptions& g, const store::Environment& env) {
  const auto store = store::Store::open(g.db, store::Access::read_only);
  store::EntryFilter f;
  f.arch = env.arch;
  f.device_name = env.device_name;
  return route::RouteTable::from_entries(store->list_entries(f));
}

// A folder only this user can read, removed when the run ends: the table and the processes' stats.
struct RunDir {
  fs::path path;
  RunDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/ktune-run.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!::mkdtemp(pattern.data()))
      throw Error(
          fmt::format("cannot create a folder under {} for ktune run's table; set TMPDIR "
                      "to a writable folder.",
                      tmp && *tmp ? tmp : "/tmp"));
    path = pattern;
  }
  ~RunDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string key_name(const nlohmann::json& w) {
  std::string s = fmt::format("{} {}", w.value("op", ""), w.value("dtype", ""));
  const auto shape = w.value("shape", std::vector<std::int64_t>{});
  const char* names[] = {"m", "n", "k", "batch"};
  for (std::size_t i = 0; i < shape.size() && i < 4; ++i)
    if (i < 3 || shape[i] > 1) s += fmt::format(" {}={}", names[i], shape[i]);
  return s;
}

// The field trials' verdicts go back to the store, with the times the program saw: a demoted winner
// is served as the call's own algorithm from then on, a confirmed one is routed from the first
// call.
std::size_t write_back(const GlobalOptions& g, const store::Environment& env,
                       const std::vector<nlohmann::json>& decided) {
  if (decided.empty()) return 0;
  const auto store = store::Store::open(g.db);
  store::EntryFilter f;
  f.arch = env.arch;
  f.device_name = env.device_name;
  std::size_t written = 0;
  for (auto e : store->list_entries(f)) {
    for (const auto& d : decided) {
      if (e.key.op != d.value("op", "") || e.key.dtype != d.value("dtype", "") ||
          e.shape != d.value("shape", std::vector<std::int64_t>{}) ||
          e.config.value("field_verdict", "") == d.value("verdict", ""))
        continue;
      e.config["field_verdict"] = d.at("verdict");
      e.config["field"] = d.at("field");
      e.config["field"]["measured_at"] = utc_now_iso8601();
      store->put_entry(e, true);
      ++written;
    }
  }
  return written;
}

int run(const Options& o, const GlobalOptions& g) {
  if (o.cmd.empty() && o.write_table.empty())
    throw UsageError(
        "no command to run; put it after '--', e.g. ktune run -- python3 train.py, or give "
        "--write-table FILE.");
  const fs::path router = locate_router();
  const store::Environment env = runtime::detect_environment(g.device);
  const route::RouteTable table = table_of(g, env);
  const std::string table_text = table.to_json().dump(1) + "\n";
  if (!o.write_table.empty()) {
    write_file_atomic(o.write_table, table_text);
    std::printf("LD_PRELOAD=%s\nKTUNE_ROUTE_TABLE=%s\n", preload_with(router).c_str(),
                fs::absolute(o.write_table).c_str());
    std::fprintf(stderr,
                 "ktune run: %zu winners for %s (%s) in %s; set the two variables above in the "
                 "program's environment (KTUNE_ROUTE_STATS=DIR adds per-process stats).\n",
                 table.winners().size(), env.device_name.c_str(), env.arch.c_str(),
                 o.write_table.c_str());
    return 0;
  }
  check_command(o.cmd[0]);
  RunDir dir;
  const fs::path table_path = dir.path / "table.json";
  write_file_atomic(table_path, table_text);
  if (!o.json)
    std::fprintf(stderr, "ktune run: %zu GEMM winners for %s (%s)%s\n", table.winners().size(),
                 env.device_name.c_str(), env.arch.c_str(),
                 o.no_field_trial ? "" : "; each routed one is tried against the default first");

  subprocess::Spawn spawn;
  spawn.own_group = false;  // a terminal's Ctrl-C reaches the program, as without ktune
  spawn.die_with_ktune = false;
  spawn.env = {{"LD_PRELOAD", preload_with(router)},
               {"KTUNE_ROUTE_TABLE", table_path.string()},
               {"KTUNE_ROUTE_STATS", dir.path.string()},
               {"KTUNE_ROUTE_FIELD_TRIAL", o.no_field_trial ? "0" : "1"}};
  subprocess::Child child;
  try {
    child = subprocess::Child::exec(o.cmd, spawn);
  } catch (const subprocess::StartError& e) {
    throw Error(fmt::format("cannot run '{}': {}; check the command after '--'.", o.cmd[0],
                            std::strerror(e.error)));
  }
  const int code = exit_code_of(child.wait());

  nlohmann::json processes = nlohmann::json::array();
  for (const auto& f : fs::directory_iterator(dir.path)) {
    const std::string name = f.path().filename().string();
    if (name.rfind("route.", 0) != 0 || f.path().extension() != ".json") continue;
    try {
      processes.push_back(nlohmann::json::parse(read_file(f.path())));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ktune run: %s is unreadable (%s); that process is not counted.\n",
                   name.c_str(), e.what());
    }
  }
  // Per winner over every process: calls, and the field trial of the process that decided it.
  std::map<std::string, nlohmann::json> winners;
  std::map<std::string, std::uint64_t> passed_by_entry, calls_by_entry, misses;
  for (const auto& p : processes) {
    for (const auto& w : p.at("winners")) {
      auto& t = winners[key_name(w)];
      if (t.is_null())
        t = w;
      else
        for (const char* c : {"routed_calls", "kept_calls", "trial_calls"})
          t[c] = t.value(c, 0ull) + w.value(c, 0ull);
      if (w.value("verdict", "") != "trying") {
        t["verdict"] = w.at("verdict");
        if (w.contains("field")) t["field"] = w.at("field");
      }
    }
    for (const auto& [entry, c] : p.at("entries").items()) {
      calls_by_entry[entry] += c.value("calls", 0ull);
      passed_by_entry[entry] += c.value("passed", 0ull);
    }
    for (const auto& m : p.at("near_misses")) misses[m.value("why", "")] += m.value("calls", 0ull);
  }
  // Only verdicts a trial in this run reached (it measured both arms) are written.
  std::vector<nlohmann::json> decided;
  std::size_t demoted = 0;
  for (const auto& [name, w] : winners)
    if (w.value("verdict", "") != "trying" && w.contains("field") &&
        !w.value("tuned_kept", false)) {
      decided.push_back(w);
      demoted += w.value("verdict", "") == "demoted";
    }
  std::size_t written = 0;
  try {
    written = write_back(g, env, decided);
  } catch (const Error& e) {
    std::fprintf(stderr, "ktune run: the field trials' verdicts were not written back: %s\n",
                 e.what());
  }

  if (o.json) {
    nlohmann::json list = nlohmann::json::array();
    for (auto& [name, w] : winners) {
      w["name"] = name;
      list.push_back(w);
    }
    print_json({{"command", o.cmd},
                {"exit_code", code},
                {"device", env.device_name},
                {"arch", env.arch},
                {"field_trial", !o.no_field_trial},
                {"processes", processes.size()},
                {"calls_by_entry", calls_by_entry},
                {"passed_by_entry", passed_by_entry},
                {"near_misses", misses},
                {"winners", list},
                {"verdicts_written", written}},
               kRunSchemaVersion);
    return code;
  }
  std::string out;
  for (const auto& [entry, calls] : calls_by_entry)
    out += fmt::format("  {:<28} {:>10} calls, {:>10} passed through\n", entry, calls,
                       passed_by_entry[entry]);
  if (!winners.empty())
    out += fmt::format("  {:<48} {:<8} {:>9} {:>9} {:>9}  {}\n", "Winner", "Verdict", "Routed",
                       "Kept", "Trial", "In the program: winner / default");
  for (const auto& [name, w] : winners) {
    std::string field = "-";
    if (w.contains("field")) {
      const double wn = w["field"].value("winner_ns", 0.0),
                   dn = w["field"].value("default_ns", 0.0);
      field = fmt::format("{:.2f} us / {:.2f} us ({:.3f}x)", wn / 1e3, dn / 1e3,
                          wn > 0 ? dn / wn : 0.0);
    }
    out += fmt::format("  {:<48} {:<8} {:>9} {:>9} {:>9}  {}\n", terminal_safe(name),
                       w.value("verdict", ""), w.value("routed_calls", 0ull),
                       w.value("kept_calls", 0ull), w.value("trial_calls", 0ull), field);
  }
  for (const auto& [why, calls] : misses)
    out += fmt::format("  {} calls had a winner of their size but were passed: {}\n", calls,
                       terminal_safe(why));
  if (demoted)
    out += fmt::format(
        "  {} winners were not faster inside the program than the call's own "
        "algorithm and are demoted; the store keeps {} verdicts for later runs.\n",
        demoted, written);
  std::fprintf(stderr, "ktune run: %s exited with %d; %zu processes routed.\n%s",
               terminal_safe(o.cmd[0]).c_str(), code, processes.size(), out.c_str());
  return code;
}

const bool registered = register_command(
    {"run", "Run a program with the cached GEMM winners routed inside cuBLAS/cuBLASLt", 25,
     [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto o = std::make_shared<Options>();
       app.add_flag("--json", o->json,
                    "JSON summary (schema_version " + std::to_string(kRunSchemaVersion) + ")");
       app.add_flag("--no-field-trial", o->no_field_trial,
                    "Route each winner at once, without first timing it against the call's own "
                    "algorithm inside the program");
       app.add_option("--write-table", o->write_table,
                      "Write the router's table of this GPU's winners to FILE and print the "
                      "environment that routes a program with it; runs nothing");
       app.add_option("command", o->cmd, "The command to run, after '--'")->expected(-1);
       return [o, &globals] { return run(*o, globals); };
     }});

}  // namespace
}  // namespace ktune::cli
