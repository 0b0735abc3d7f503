#include "adapters/script/sandbox.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <set>

namespace attune::script {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 2> kBwrapPaths = {"/usr/bin/bwrap", "/usr/local/bin/bwrap"};
// The host's folders that the sandbox shows read-only, as they are (a folder or a symlink).
constexpr std::array<std::string_view, 7> kSystemDirs = {"/usr",   "/bin",   "/sbin",  "/lib",
                                                         "/lib32", "/lib64", "/libx32"};
constexpr std::array<std::string_view, 3> kMadeByTheSandbox = {"/proc", "/dev", kSandboxRunDir};

bool is_under(std::string_view path, std::string_view folder) {
  return path == folder || (path.size() > folder.size() &&
                            path.substr(0, folder.size()) == folder && path[folder.size()] == '/');
}

// "/a/b/c" gives "/a", "/a/b".
std::vector<std::string> ancestors(const std::string& path) {
  std::vector<std::string> folders;
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    folders.push_back(path.substr(0, slash));
  }
  return folders;
}

// The host's /etc entries, except those a mount of the plan replaces, sorted.
std::vector<fs::directory_entry> etc_entries(const SandboxPlan& plan) {
  std::vector<fs::directory_entry> entries;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/etc", ec)) {
    const std::string inside = entry.path().string();
    const bool replaced =
        std::any_of(plan.mounts.begin(), plan.mounts.end(),
                    [&](const SandboxMount& m) { return m.inside_path == inside; });
    if (!replaced) entries.push_back(entry);
  }
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.path() < b.path(); });
  return entries;
}

void add_system(std::vector<std::string>& argv) {
  for (const std::string_view dir : kSystemDirs) {
    const fs::path path(dir);
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(path, ec);
    if (ec || !fs::exists(status)) continue;
    if (fs::is_symlink(status)) {
      argv.insert(argv.end(), {"--symlink", fs::read_symlink(path, ec).string(), path.string()});
    } else {
      argv.insert(argv.end(), {"--ro-bind", path.string(), path.string()});
    }
  }
  argv.insert(argv.end(), {"--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--dir", "/tmp",
                           "--dir", std::string(kSandboxHome), "--dir", "/etc"});
}

void add_etc(std::vector<std::string>& argv, const SandboxPlan& plan) {
  for (const fs::directory_entry& entry : etc_entries(plan)) {
    std::error_code ec;
    const std::string path = entry.path().string();
    if (entry.is_symlink(ec)) {
      argv.insert(argv.end(), {"--symlink", fs::read_symlink(entry.path(), ec).string(), path});
    } else if (entry.is_directory(ec) || entry.is_regular_file(ec)) {
      argv.insert(argv.end(), {"--ro-bind", path, path});
    }
  }
}

// --dir for each folder above `path` that is not there yet: bwrap would make them 0700.
void add_parents(std::vector<std::string>& argv, std::set<std::string>& made,
                 const std::string& path) {
  for (const std::string& folder : ancestors(path)) {
    if (made.insert(folder).second) argv.insert(argv.end(), {"--dir", folder});
  }
}

}  // namespace

Result<std::string> find_bwrap() {
  for (const std::string_view path : kBwrapPaths) {
    if (::access(std::string(path).c_str(), X_OK) == 0) return std::string(path);
  }
  return make_error("bubblewrap (bwrap) is not installed");
}

Status check_inside_path(const std::string& inside_path) {
  const fs::path path(inside_path);
  if (!path.is_absolute()) return make_error(inside_path + ": not an absolute path");
  for (const fs::path& part : path.relative_path()) {
    if (part == "." || part == "..") return make_error(inside_path + ": has . or .. in it");
  }
  if (inside_path == "/" || inside_path == "/etc") {
    return make_error(inside_path + ": is a folder the sandbox makes");
  }
  for (const std::string_view folder : kSystemDirs) {
    if (is_under(inside_path, folder)) {
      return make_error(inside_path + ": inside " + std::string(folder) +
                        ", which the sandbox shows read-only from this machine");
    }
  }
  for (const std::string_view folder : kMadeByTheSandbox) {
    if (is_under(inside_path, folder)) {
      return make_error(inside_path + ": inside " + std::string(folder) +
                        ", which the sandbox makes itself");
    }
  }
  // A new /etc entry, or one replacing an entry of /etc, is fine; one inside an existing
  // folder of /etc is not: that folder is the host's, read-only.
  const std::vector<std::string> above = ancestors(inside_path);
  if (is_under(inside_path, "/etc") && above.size() >= 2 && fs::exists(above[1])) {
    return make_error(inside_path + ": inside " + above[1] +
                      ", which the sandbox shows read-only from this machine");
  }
  return Ok{};
}

std::vector<std::string> bwrap_argv(const std::string& bwrap_path, const SandboxPlan& plan) {
  std::vector<std::string> argv = {bwrap_path};
  // No network, its own PID, IPC, UTS and mount namespaces, no capabilities, no terminal to
  // inject into; it goes when its parent goes.
  argv.insert(argv.end(),
              {"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"});
  argv.insert(argv.end(), {"--hostname", plan.hostname});
  // One bounded tmpfs under everything the script may write.
  argv.insert(argv.end(), {"--size", std::to_string(kSandboxTmpfsBytesMax), "--tmpfs", "/"});
  add_system(argv);
  add_etc(argv, plan);
  std::set<std::string> made = {"/", "/tmp", std::string(kSandboxHome), "/home", "/etc"};
  for (const SandboxMount& mount : plan.mounts) {
    add_parents(argv, made, mount.inside_path);
    argv.insert(argv.end(),
                {mount.writable ? "--bind" : "--ro-bind", mount.host_path, mount.inside_path});
  }
  std::vector<std::string> folders = plan.directories;
  folders.push_back(plan.cwd);
  for (const std::string& folder : folders) {
    add_parents(argv, made, folder);
    if (made.insert(folder).second) argv.insert(argv.end(), {"--dir", folder});
  }
  argv.insert(argv.end(), {"--chdir", plan.cwd, "--"});
  argv.insert(argv.end(), plan.command.begin(), plan.command.end());
  return argv;
}

}  // namespace attune::script
