#pragma once
// Tuning packs: a versioned JSON file of op specs and cache entries that an application ships
// (`ktune cache export` writes one, `ktune cache import` and the runtime library read one).
#include <filesystem>
#include <string>
#include <vector>

#include "ktune/store/cache_entry.hpp"

namespace ktune::store {

constexpr int kPackSchemaVersion = 1;
constexpr const char* kPackFormat = "ktune-tuning-pack";

struct Pack {
  std::string created_at;
  std::string ktune_version;
  std::vector<OpSpec> ops;
  std::vector<CacheEntry> entries;
};

struct ImportResult {
  std::size_t ops = 0, winners = 0, kept = 0;  // kept: the stored winner stayed
};

nlohmann::json pack_to_json(const Pack& pack);
// Validates the whole document; the Error names `source`, the entry index and the field.
Pack pack_from_json(const nlohmann::json& j, const std::string& source);
Pack read_pack(const std::filesystem::path& path);
void write_pack(const std::filesystem::path& path, const Pack& pack);  // atomically

}  // namespace ktune::store
