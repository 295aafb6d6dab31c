#include "print_json.hpp"

#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune::cli {

void print_json(nlohmann::json doc, int schema_version) {
  doc["schema_version"] = schema_version;
  print_json(doc);
}

void print_json(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("schema_version"))
    throw Error("internal: a document to print has no schema_version.");
  fmt::print("{}\n", doc.dump(2));
}

}  // namespace ktune::cli
