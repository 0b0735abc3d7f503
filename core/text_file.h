// Reading a whole text file (campaign files, recipes, policies, loss curves, job logs), with a
// one-line error that names the file and why it cannot be read.
#pragma once

#include <string>

#include "events/result.h"

namespace attune {

Result<std::string> read_text_file(const std::string& path);

}  // namespace attune
