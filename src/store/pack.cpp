#include "ktune/store/pack.hpp"

#include <fmt/format.h>

#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"

namespace ktune::store {

nlohmann::json pack_to_json(const Pack& pack) {
  nlohmann::json j{{"format", kPackFormat},
                   {"schema_version", kPackSchemaVersion},
                   {"created_at", pack.created_at},
                   {"ktune_version", pack.ktune_version},
                   {"ops", pack.ops},
                   {"entries", pack.entries}};
  return j;
}

Pack pack_from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object() || j.value("format", "") != kPackFormat)
    throw Error(
        fmt::format("{} is not a ktune tuning pack (its \"format\" is not \"{}\"); "
                    "export one with `ktune cache export`.",
                    source, kPackFormat));
  if (!j.contains("schema_version") || !j["schema_version"].is_number_integer())
    throw Error(fmt::format("{} has no integer \"schema_version\"; re-export the pack.", source));
  const int version = j["schema_version"].get<int>();
  if (version > kPackSchemaVersion)
    throw Error(
        fmt::format("{} is a tuning pack of schema version {}, newer than this ktune "
                    "reads ({}); upgrade ktune.",
                    source, version, kPackSchemaVersion));
  if (version < 1)
    throw Error(fmt::format("{} has schema_version {}; re-export the pack.", source, version));
  for (const char* list : {"ops", "entries"})
    if (!j.contains(list) || !j[list].is_array())
      throw Error(
          fmt::format("{}: the field \"{}\" must be an array; re-export the pack.", source, list));
  Pack pack;
  pack.created_at = j.value("created_at", "");
  pack.ktune_version = j.value("ktune_version", "");
  for (std::size_t i = 0; i < j["ops"].size(); ++i) {
    const std::string where = fmt::format("{}: ops[{}]", source, i);
    try {
      pack.ops.push_back(j["ops"][i].get<OpSpec>());
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", where, e.what()));
    }
    validate(pack.ops.back(), where);
  }
  for (std::size_t i = 0; i < j["entries"].size(); ++i) {
    const std::string where = fmt::format("{}: entries[{}]", source, i);
    try {
      pack.entries.push_back(j["entries"][i].get<CacheEntry>());
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", where, e.what()));
    }
    validate(pack.entries.back(), where);
  }
  return pack;
}

Pack read_pack(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    throw Error(
        fmt::format("{} is not valid JSON; a tuning pack is the JSON that `ktune cache "
                    "export` writes.",
                    path.string()));
  return pack_from_json(j, path.string());
}

void write_pack(const std::filesystem::path& path, const Pack& pack) {
  write_file_atomic(path, pack_to_json(pack).dump(2) + "\n");
}

}  // namespace ktune::store
