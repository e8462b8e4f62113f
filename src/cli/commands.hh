// One function per command; main.cc holds the table that wires them to CLI11.
#pragma once

#include <string>

#include "cli/common.hh"

namespace mesh::cli {

int runApply(const std::string& declPath, CommonOptions& o);
int runPlan(const std::string& declPath, CommonOptions& o);
int runStatus(CommonOptions& o);

}  // namespace mesh::cli
