#include "ktune/tune/inductor_kernel.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "ktune/core/error.hpp"
#include "ktune/core/version.hpp"

namespace ktune::tune {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<fs::path> ktune_python_path(const fs::path& exe) {
  // build/src/cli/ktune -> build/python; site-packages/ktune/bin/ktune -> site-packages.
  const fs::path top = exe.parent_path().parent_path().parent_path();
  for (const fs::path& root : {top / "python", top}) {
    std::error_code ec;
    if (fs::is_regular_file(root / "ktune" / "__init__.py", ec)) return root;
  }
  return std::nullopt;
}

ChildProgram ktune_inductor_program(const std::vector<std::string>& args,
                                    const std::string& python) {
  std::string interpreter = python;
  if (interpreter.empty())
    if (const char* env = std::getenv("KTUNE_PYTHON"); env && *env) interpreter = env;
  if (interpreter.empty()) interpreter = "python3";
  ChildProgram p;
  p.argv = {interpreter, "-m", "ktune.inductor"};
  p.argv.insert(p.argv.end(), args.begin(), args.end());
  std::error_code ec;
  if (const auto root = ktune_python_path(fs::read_symlink("/proc/self/exe", ec)); root && !ec) {
    const char* old = std::getenv("PYTHONPATH");
    p.env.emplace_back("PYTHONPATH", old && *old ? root->string() + ":" + old : root->string());
  }
  return p;
}

InductorDescription inductor_description(const json& d) {
  InductorDescription out;
  try {
    if (d.at("schema_version").get<int>() != kInductorDescriptionSchemaVersion)
      throw Error(fmt::format("schema_version {} is not {}", d.at("schema_version").dump(),
                              kInductorDescriptionSchemaVersion));
    for (const char* f :
         {"name", "kind", "lookup_hash", "source_hash", "dtype", "torch", "triton", "timing"})
      if (!d.at(f).is_string()) throw Error(fmt::format("'{}' must be a string", f));
    out.name = d["name"];
    out.kind = d["kind"];
    out.lookup_hash = d["lookup_hash"];
    out.source_hash = d["source_hash"];
    out.dtype = d["dtype"];
    out.torch = d["torch"];
    out.triton = d["triton"];
    out.timing = d["timing"];
    if (out.lookup_hash.size() != 64 ||
        out.lookup_hash.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw Error("'lookup_hash' must be 64 lower-case hex digits");
    for (const auto& [k, v] : d.at("numels").items())
      out.numels.emplace_back(k, v.get<std::int64_t>());
    // xnumel, ynumel, znumel, then r0_numel, r1_numel: the launch shape in Inductor's order.
    std::stable_sort(out.numels.begin(), out.numels.end(), [](const auto& a, const auto& b) {
      return (a.first[0] == 'r') < (b.first[0] == 'r') ||
             ((a.first[0] == 'r') == (b.first[0] == 'r') && a.first < b.first);
    });
    out.parameters = d.at("parameters").get<std::vector<std::string>>();
    for (const auto& c : d.at("configs")) {
      if (!c.is_array() || c.size() != out.parameters.size())
        throw Error(
            fmt::format("a configuration ({}) does not give one value per parameter", c.dump()));
      std::vector<Value> values;
      for (const auto& v : c) values.push_back(v.get<Value>());
      out.configs.push_back(std::move(values));
    }
    if (out.configs.empty()) throw Error("'configs' is empty: there is nothing to tune");
    out.inductor = d.at("inductor").get<std::vector<std::size_t>>();
    if (!d.at("default").is_null()) out.default_config = d["default"].get<std::size_t>();
    for (std::size_t p : out.inductor)
      if (p >= out.configs.size()) throw Error("'inductor' names a position past 'configs'");
    if (out.default_config && *out.default_config >= out.configs.size())
      throw Error("'default' names a position past 'configs'");
  } catch (const std::exception& e) {  // a JSON type error or a check above
    throw Error(fmt::format(
        "the measuring program's description of the Inductor kernel is malformed ({}); ktune and "
        "its Python package ktune.inductor must come from the same release.",
        e.what()));
  }
  return out;
}

ConfigMap inductor_config(const InductorDescription& d, std::size_t position) {
  ConfigMap c;
  for (std::size_t i = 0; i < d.parameters.size(); ++i)
    c[d.parameters[i]] = d.configs.at(position)[i];
  return c;
}

InductorSpace::InductorSpace(const InductorDescription& d) {
  std::vector<Parameter> params;
  for (std::size_t f = 0; f < d.parameters.size(); ++f) {
    Parameter p;
    p.name = d.parameters[f];
    p.type = "int";
    for (const auto& c : d.configs)
      if (std::find(p.values.begin(), p.values.end(), c[f]) == p.values.end())
        p.values.push_back(c[f]);
    std::sort(p.values.begin(), p.values.end(), [](const Value& a, const Value& b) {
      return a.is_number() && b.is_number() ? a.as_double() < b.as_double() : a.repr() < b.repr();
    });
    params.push_back(std::move(p));
  }
  space_ = std::make_unique<SearchSpace>(std::move(params), std::vector<Constraint>{});
  std::vector<Configuration> configs;
  std::vector<std::uint32_t> flat;
  for (const auto& c : d.configs) {
    Configuration conf;
    for (std::size_t f = 0; f < c.size(); ++f) {
      const auto& pv = space_->parameters()[f].values;
      conf.push_back(
          static_cast<std::uint32_t>(std::find(pv.begin(), pv.end(), c[f]) - pv.begin()));
    }
    flat.insert(flat.end(), conf.begin(), conf.end());
    configs.push_back(std::move(conf));
  }
  index_ = std::make_unique<IndexedSpace>(IndexedSpace::from_flat(*space_, std::move(flat)));
  std::vector<std::size_t> order;
  if (d.default_config) order.push_back(*d.default_config);
  order.insert(order.end(), d.inductor.begin(), d.inductor.end());
  for (std::size_t p : order)
    if (const auto pos = index_->find(configs[p]);
        pos && std::find(first_.begin(), first_.end(), *pos) == first_.end())
      first_.push_back(*pos);
}

SearchTarget inductor_target(const InductorDescription& d, const InductorSpace& space) {
  SearchTarget t;
  t.source = d.name + " (Inductor)";
  t.op = "inductor:" + d.lookup_hash;
  for (const auto& [k, v] : d.numels) t.shape[k] = v;
  t.space = &space.index();
  t.first = space.first();
  return t;
}

const SessionRecord* inductor_default_record(const InductorDescription& d,
                                             const SessionSummary& session) {
  if (!d.default_config) return nullptr;
  const ConfigMap choice = inductor_config(d, *d.default_config);
  for (const auto& r : session.records)
    if (r.config == choice && r.result.status == Status::ok && r.result.full) return &r;
  return nullptr;
}

std::string inductor_toolkit(const std::string& toolkit, const std::string& triton,
                             const std::string& torch) {
  return fmt::format("{}+triton-{}+torch-{}", toolkit, triton, torch);
}

store::CacheEntry inductor_winner_entry(const InductorDescription& d, const SessionSummary& session,
                                        const store::Environment& env, const HostIdentity& host) {
  const SessionRecord* def = inductor_default_record(d, session);
  const SessionRecord* chosen = kept_winner(session, def);
  if (!chosen)
    throw Error(fmt::format(
        "the search over {}'s configurations found none that agrees with Inductor's choice, so "
        "nothing goes into the cache; see its results.jsonl for why candidates failed.",
        d.name));
  store::CacheEntry e;
  e.key.op = "inductor:" + d.lookup_hash;
  e.key.dtype = d.dtype;
  e.key.arch = env.arch;
  e.key.device_name = env.device_name;
  e.key.toolkit = inductor_toolkit(env.toolkit, d.triton, d.torch);
  e.key.driver_major = env.driver_major;
  for (const auto& [k, v] : d.numels) e.shape.push_back(v);
  for (const auto& [k, v] : chosen->config) e.config[k] = v;
  e.median_ns = chosen->result.time_ns();
  e.noise_ns = chosen->result.noise_ns();
  e.samples = static_cast<std::int64_t>(chosen->result.samples());
  e.throughput = 1e9 / e.median_ns;
  e.throughput_unit = "launches/s";
  e.verification = "passed";
  e.provenance.ktune_version = version();
  e.provenance.ktune_commit = git_commit();
  e.provenance.host = host.hostname;
  e.provenance.created_at = utc_now_iso8601();
  e.provenance.strategy = "inductor/" + session.strategy;
  e.provenance.budget = {{"evaluations", session.budget},
                         {"evaluated", session.evaluations},
                         {"candidates", d.configs.size()},
                         {"seed", session.seed},
                         {"kernel", d.name},
                         {"kind", d.kind},
                         {"source_hash", d.source_hash},
                         {"ops", d.ops},
                         {"timing", d.timing}};
  if (def) e.provenance.budget["default_median_ns"] = def->result.time_ns();
  return e;
}

}  // namespace ktune::tune
