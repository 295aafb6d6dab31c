// ktune cache ls | get | put | rm | export | import | invalidate | stats: the tuning cache. Exit
// codes: the CLI's (0 ok, 1 failed, 2 usage), and 3 when `cache get` finds no config.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "ktune/core/assignments.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/json.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/runtime/environment.hpp"
#include "ktune/store/store.hpp"
#include "print_json.hpp"

namespace ktune::cli {
namespace {

constexpr int kCacheSchemaVersion = 1;  // of every --json output of `ktune cache`
constexpr int kExitCacheMiss = 3;       // ktune cache get: no entry and no default

struct Options {
  // all: act on every entry with no filter (rm, invalidate); include_invalidated: ls lists them.
  bool json = false, all = false, include_invalidated = false, stale = false, force = false;
  store::EntryFilter filter;
  std::string shape, file, reason = "invalidated by ktune cache invalidate";
  store::Environment env;  // --arch/--device-name/--toolkit/--driver-major, else the GPU's
};

// The example every --shape error of `ktune cache` shows.
constexpr std::string_view kShapeExample = "m=4096,n=4096,k=1024";

// Flags fill what they name; the rest comes from the GPU when one is there. Staleness needs only
// the toolkit (and driver); a lookup also needs the arch and device.
store::Environment environment(const Options& o, const GlobalOptions& g, bool for_lookup) {
  store::Environment env = o.env;
  env.arch = o.filter.arch;
  env.device_name = o.filter.device_name;
  const bool complete =
      !env.toolkit.empty() && (!for_lookup || (!env.arch.empty() && !env.device_name.empty()));
  if (complete) return env;
  try {
    const auto gpu = runtime::detect_environment(g.device);
    if (env.arch.empty()) env.arch = gpu.arch;
    if (env.device_name.empty()) env.device_name = gpu.device_name;
    if (env.toolkit.empty()) env.toolkit = gpu.toolkit;
    if (env.driver_major == 0) env.driver_major = gpu.driver_major;
  } catch (const Error&) {
    throw Error(for_lookup ? "no GPU to take the environment from; pass --arch, --device-name and "
                             "--toolkit (and --driver-major where it matters)."
                           : "no GPU to judge staleness against; pass --toolkit (and "
                             "--driver-major where it matters).");
  }
  return env;
}

void add_filter(CLI::App& app, Options& o) {
  app.add_option("--op", o.filter.op, "Only this op");
  app.add_option("--dtype", o.filter.dtype, "Only this dtype");
  app.add_option("--arch", o.filter.arch,
                 "Only this GPU architecture, sm_90 (and the current one, default: the GPU's)");
  app.add_option("--device-name", o.filter.device_name,
                 "Only this device name (and the current one, default: the GPU's)");
  app.add_option("--with-toolkit", o.filter.toolkit, "Only entries tuned with this toolkit");
}

void add_env(CLI::App& app, Options& o) {
  app.add_option("--toolkit", o.env.toolkit, "Current toolkit, e.g. 13.0 (default: NVRTC's)");
  app.add_option("--driver-major", o.env.driver_major, "Current driver major (default: NVML's)");
}

void print_entries(const std::vector<store::CacheEntry>& entries, const store::Environment* env) {
  print_text("{:<14} {:<6} {:<22} {:<6} {:<26} {:<7} {:>12} {:>9}  {}\n", "op", "dtype", "bucket",
             "arch", "device", "toolkit", "median_us", "noise_us", "config");
  for (const auto& e : entries) {
    std::string note;
    if (e.invalidated_at)
      note = "  [invalid: " + e.invalid_reason.value_or("") + "]";
    else if (env && !store::stale_reason(e.key, *env).empty())
      note = "  [stale: " + store::stale_reason(e.key, *env) + "]";
    print_text("{:<14} {:<6} {:<22} {:<6} {:<26} {:<7} {:>12.3f} {:>9.3f}  {}{}\n", e.key.op,
               e.key.dtype, e.key.bucket, e.key.arch, e.key.device_name, e.key.toolkit,
               e.median_ns / 1e3, e.noise_ns / 1e3, e.config.dump(), note);
  }
  print_text("{} entr{}\n", entries.size(), entries.size() == 1 ? "y" : "ies");
}

// A `-` names stdin; the text and the name to quote in errors.
std::pair<std::string, std::string> read_input(const std::string& file) {
  if (file == "-") return {read_stream(std::cin, "stdin"), "stdin"};
  return {read_file(file), file};
}

int run_ls(const Options& o, const GlobalOptions& g) {
  const auto s = open_for_listing(g.db);
  store::EntryFilter f = o.filter;
  f.include_invalidated = o.include_invalidated;
  std::optional<store::Environment> env;
  if (o.stale) {
    env = environment(o, g, false);
    f.stale_relative_to = env;
  }
  const auto entries = s ? s->list_entries(f) : std::vector<store::CacheEntry>{};
  const std::string where = s ? s->describe() : store_location(g.db);
  if (o.json)
    print_json({{"store", where}, {"entries", entries}}, kCacheSchemaVersion);
  else
    print_entries(entries, env ? &*env : nullptr);
  return 0;
}

int run_get(const Options& o, const GlobalOptions& g) {
  if (o.filter.op.empty() || o.filter.dtype.empty() || o.shape.empty())
    throw UsageError(fmt::format(
        "ktune cache get needs --op, --dtype and --shape (e.g. --shape {}).", kShapeExample));
  // A bad flag is named before the store is looked at; the names then need the op's declaration.
  // Either way a --shape that cannot be read is a usage error.
  std::vector<NamedSize> sizes;
  try {
    sizes = parse_named_sizes(o.shape, "--shape", kShapeExample);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  const auto s = open_for_listing(g.db);  // no store yet: nothing matches (a miss, exit 3)
  const auto op = s ? s->get_op(o.filter.op) : std::nullopt;
  std::vector<std::int64_t> shape;
  try {
    shape =
        store::shape_of(op ? op->buckets : store::BucketPolicy{}, sizes, o.filter.op, "--shape");
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  store::LookupQuery q{o.filter.op, o.filter.dtype, shape, environment(o, g, true)};
  const auto r = s ? s->lookup(q) : store::LookupResult{};
  if (o.json) {
    print_json(nlohmann::json(r), kCacheSchemaVersion);
  } else if (r.match == store::Match::none) {
    print_text("no config for {} {} {} on {} (no entry and no default)\n", q.op, q.dtype,
               store::shape_name(q.shape), q.env.arch);
  } else {
    print_text("{}  ({} match, bucket {}{})\n", r.config.dump(), store::to_string(r.match),
               r.bucket, r.stale ? ", STALE: " + r.stale_reason : "");
  }
  return r.match == store::Match::none ? kExitCacheMiss : 0;
}

int run_put(const Options& o, const GlobalOptions& g) {
  const auto [text, source] = read_input(o.file);
  const auto j = parse_json(text, source, "give one cache entry object");
  store::CacheEntry e;
  try {
    e = j.get<store::CacheEntry>();
  } catch (const Error& err) {
    throw Error(fmt::format("{}: {}", source, err.what()));
  }
  auto s = store::Store::open(g.db);
  const auto r = s->put_entry(e, o.force);
  if (o.json)
    print_json({{"winner", r.winner}, {"reason", r.reason}, {"bucket", r.bucket}},
               kCacheSchemaVersion);
  else
    print_text("{}: {}\n", r.winner ? "stored as winner" : "kept the stored winner", r.reason);
  return 0;
}

int run_rm(const Options& o, const GlobalOptions& g) {
  const auto& f = o.filter;
  if (!o.all && f.op.empty() && f.dtype.empty() && f.arch.empty() && f.device_name.empty() &&
      f.toolkit.empty())
    throw UsageError(
        "ktune cache rm needs a filter (--op, --arch, ...) or --all to remove everything.");
  auto s = store::Store::open(g.db);
  const auto n = s->remove_entries(f);
  if (o.json)
    print_json({{"removed", n}}, kCacheSchemaVersion);
  else
    print_text("removed {} entr{}\n", n, n == 1 ? "y" : "ies");
  return 0;
}

int run_export(const Options& o, const GlobalOptions& g) {
  const bool to_stdout = is_stdout(o.file);
  auto s = store::Store::open(g.db, store::Access::read_only);
  if (!to_stdout) {
    // The store's SQLite file and its WAL companions are inputs the pack must not replace.
    if (const auto db = s->file())
      check_output_path(o.file, {*db, db->string() + "-wal", db->string() + "-shm"});
  }
  const auto pack = s->export_pack(o.filter);
  if (to_stdout) {
    print_json(store::pack_to_json(pack));
  } else {
    store::write_pack(o.file, pack);
    if (o.json)  // the pack itself is JSON; --json then says what was written where
      print_json({{"output", o.file}, {"entries", pack.entries.size()}, {"ops", pack.ops.size()}},
                 kCacheSchemaVersion);
    else
      std::fprintf(stderr, "wrote %zu entries and %zu op specs to %s\n", pack.entries.size(),
                   pack.ops.size(), o.file.c_str());
  }
  return 0;
}

int run_import(const Options& o, const GlobalOptions& g) {
  // Validated whole before the store is opened.
  const auto pack =
      o.file == "-" ? store::pack_from_json(
                          parse_json(read_stream(std::cin, "stdin"), "stdin",
                                     "a tuning pack is the JSON that `ktune cache export` writes"),
                          "stdin")
                    : store::read_pack(o.file);
  auto s = store::Store::open(g.db);
  const auto r = s->import_pack(pack, o.force);
  if (o.json)
    print_json({{"ops", r.ops}, {"winners", r.winners}, {"kept", r.kept}}, kCacheSchemaVersion);
  else
    print_text("imported {}: {} new winners, {} stored winners kept, {} op specs\n", o.file,
               r.winners, r.kept, r.ops);
  return 0;
}

int run_invalidate(const Options& o, const GlobalOptions& g) {
  const auto& f = o.filter;
  if (!o.stale && !o.all && f.op.empty() && f.dtype.empty() && f.arch.empty() &&
      f.device_name.empty() && f.toolkit.empty())
    throw UsageError(
        "ktune cache invalidate needs --stale, a filter (--op, --arch, ...) or --all.");
  auto s = store::Store::open(g.db);
  const store::Environment env = o.stale ? environment(o, g, false) : store::Environment{};
  const auto n = s->invalidate(f, env, o.stale, o.reason);
  if (o.json)
    print_json({{"invalidated", n}}, kCacheSchemaVersion);
  else
    print_text("invalidated {} entr{}\n", n, n == 1 ? "y" : "ies");
  return 0;
}

int run_stats(const Options& o, const GlobalOptions& g) {
  const auto s = open_for_listing(g.db);
  store::EntryFilter all;
  all.include_invalidated = true;
  const auto entries = s ? s->list_entries(all) : std::vector<store::CacheEntry>{};
  const std::string where = s ? s->describe() : store_location(g.db);
  // 0: there is no store there yet.
  const int schema = s ? s->schema_version() : 0;
  store::Environment env;
  try {
    env = environment(o, g, false);
  } catch (const Error&) {  // stats without a GPU or --toolkit: stale count unknown
  }
  std::map<std::string, int> per_op, per_arch;
  int invalid = 0, stale = 0;
  for (const auto& e : entries) {
    if (e.invalidated_at) {
      ++invalid;
      continue;
    }
    ++per_op[e.key.op];
    ++per_arch[e.key.arch];
    if (!env.toolkit.empty() && !store::stale_reason(e.key, env).empty()) ++stale;
  }
  const nlohmann::json j = {{"store", where},
                            {"store_schema_version", schema},
                            {"entries", entries.size()},
                            {"invalidated", invalid},
                            {"stale", stale},
                            {"ops", s ? s->ops().size() : 0},
                            {"per_op", per_op},
                            {"per_arch", per_arch}};
  if (o.json) {
    print_json(j, kCacheSchemaVersion);
  } else {
    print_text("store      {} ({})\n", where,
               s ? fmt::format("schema {}", schema) : std::string("none there yet"));
    print_text("entries    {} ({} invalidated, {} stale{})\n", entries.size(), invalid, stale,
               env.toolkit.empty() ? ": no GPU or --toolkit to judge" : "");
    for (const auto& [op, n] : per_op) print_text("  op   {:<20} {}\n", op, n);
    for (const auto& [arch, n] : per_arch) print_text("  arch {:<20} {}\n", arch, n);
  }
  return 0;
}

const bool registered = register_command(
    {"cache", "List, query, edit, export and import the tuning cache", 40,
     [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto o = std::make_shared<Options>();
       app.require_subcommand(1);
       using Fn = int (*)(const Options&, const GlobalOptions&);
       auto subs = std::make_shared<std::vector<std::pair<CLI::App*, Fn>>>();
       auto add = [&](const char* name, const char* help, Fn fn) {
         CLI::App* sub = app.add_subcommand(name, help);
         sub->add_flag("--json", o->json,
                       "JSON output (schema_version " + std::to_string(kCacheSchemaVersion) + ")");
         subs->emplace_back(sub, fn);
         return sub;
       };
       auto* ls = add("ls", "List entries (a table, or --json); an empty store lists none", run_ls);
       add_filter(*ls, *o);
       add_env(*ls, *o);
       ls->add_flag("--include-invalidated", o->include_invalidated,
                    "Also list invalidated entries");
       ls->add_flag("--stale", o->stale, "Only entries stale here: to re-tune");
       auto* get = add("get",
                       "Look up the config of an op and shape on this GPU; exit code 3 when "
                       "nothing matches (no entry and no default)",
                       run_get);
       add_filter(*get, *o);
       add_env(*get, *o);
       get->add_option("--shape", o->shape,
                       "Shape by the op's dimension names, as ktune tune takes it "
                       "(m=4096,n=4096,k=1024)")
           ->required();
       auto* put =
           add("put", "Offer one entry (JSON object, a file or -); winner rule applies", run_put);
       put->add_option("file", o->file, "Entry JSON file, or - for stdin")->required();
       put->add_flag("--force", o->force, "Replace the stored winner even if not faster");
       auto* rm = add("rm", "Remove entries matching a filter", run_rm);
       add_filter(*rm, *o);
       rm->add_flag("--all", o->all, "Every entry, with no filter needed");
       auto* ex = add("export", "Write a tuning pack (JSON) of the matching entries", run_export);
       add_filter(*ex, *o);
       add_output_option(*ex, o->file, "Pack file (default: stdout)");
       auto* im = add("import", "Read a tuning pack; all of it or nothing", run_import);
       im->add_option("file", o->file, "Pack file, or - for stdin")->required();
       im->add_flag("--force", o->force, "Pack entries replace stored winners regardless");
       auto* inv =
           add("invalidate", "Mark entries as never to be handed out again", run_invalidate);
       add_filter(*inv, *o);
       add_env(*inv, *o);
       inv->add_flag("--stale", o->stale, "Only entries from another toolkit or driver");
       inv->add_flag("--all", o->all, "Every entry, with no filter needed");
       inv->add_option("--reason", o->reason, "Recorded with each entry");
       auto* st = add("stats", "Counts per op and arch, stale and invalidated entries", run_stats);
       st->add_option("--arch", o->filter.arch, "Current arch (default: the GPU's)");
       st->add_option("--device-name", o->filter.device_name,
                      "Current device (default: the GPU's)");
       add_env(*st, *o);
       return [o, subs, &globals] {
         for (const auto& [sub, fn] : *subs)
           if (sub->parsed()) return fn(*o, globals);
         return 2;
       };
     }});

}  // namespace
}  // namespace ktune::cli
