#pragma once
// The one way a command prints a document for programs: every --json output, and a tuning pack
// exported to stdout.
#include <nlohmann/json.hpp>

namespace ktune::cli {

// `doc`, an object, stamped with "schema_version", indented by two, then a line break, on stdout.
void print_json(nlohmann::json doc, int schema_version);
// A document whose to_json already stamped its schema_version; ktune::Error (internal) when it did
// not, so no unversioned document reaches a reader.
void print_json(const nlohmann::json& doc);

}  // namespace ktune::cli
