#pragma once
// Which ktune produced an artifact. Filled in at configure time (cmake/KtuneVersion.cmake).
namespace ktune {
const char* version();
const char* git_commit();  // short hash, "-dirty" when built from uncommitted changes
}  // namespace ktune
