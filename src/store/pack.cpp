#include "ktune/store/pack.hpp"

#include <limits>

#include <fmt/format.h>

#include "ktune/core/error.hpp"
#include "ktune/core/json.hpp"
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
  if (!j.is_object() || !j.contains("format") || j["format"] != kPackFormat)
    throw Error(
        fmt::format("{} is not a ktune tuning pack (its \"format\" is not \"{}\"); "
                    "export one with `ktune cache export`.",
                    source, kPackFormat));
  if (!j.contains("schema_version"))
    throw Error(fmt::format("{} has no integer \"schema_version\"; re-export the pack.", source));
  const std::int64_t version =
      json_integer(j["schema_version"], fmt::format("{}: \"schema_version\"", source), 1,
                   std::numeric_limits<int>::max());
  if (version > kPackSchemaVersion)
    throw Error(
        fmt::format("{} is a tuning pack of schema version {}, newer than this ktune "
                    "reads ({}); upgrade ktune.",
                    source, version, kPackSchemaVersion));
  for (const char* list : {"ops", "entries"})
    if (!j.contains(list) || !j[list].is_array())
      throw Error(
          fmt::format("{}: the field \"{}\" must be an array; re-export the pack.", source, list));
  Pack pack;
  try {
    pack.created_at = json_optional_string(j, "created_at");
    pack.ktune_version = json_optional_string(j, "ktune_version");
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", source, e.what()));
  }
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
  // A pack is about 1 KB per entry: 512 MiB holds half a million, more than any cache exports.
  constexpr std::size_t kMaxPackBytes = std::size_t{512} << 20;
  const auto j = parse_json(read_file(path, kMaxPackBytes), path.string(),
                            "a tuning pack is the JSON that `ktune cache export` writes");
  return pack_from_json(j, path.string());
}

void write_pack(const std::filesystem::path& path, const Pack& pack) {
  write_file_atomic(path, pack_to_json(pack).dump(2) + "\n");
}

}  // namespace ktune::store
