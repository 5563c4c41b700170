// /proc/PID/stat gives each process's parent, process group and session;
// the tree is recomputed each round, since a process may fork while its
// relatives are being killed.
#include "adapters/process/process_tree.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace attnspec {
namespace {

struct ProcessStat {
  pid_t pid = 0, parent = 0, group = 0, session = 0;
  char state = '?';
};

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::set<pid_t>& live_adapters() {
  static std::set<pid_t> pids;
  return pids;
}

std::vector<ProcessStat> all_processes() {
  std::vector<ProcessStat> processes;
  DIR* proc = ::opendir("/proc");
  if (!proc) return processes;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    std::ifstream in("/proc/" + std::string(entry->d_name) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // "pid (comm) state ppid pgrp session ...": comm may hold spaces and
    // parentheses, so the fields are read after the last ')'.
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 1));
    ProcessStat stat;
    stat.pid = static_cast<pid_t>(pid);
    if (fields >> stat.state >> stat.parent >> stat.group >> stat.session) processes.push_back(stat);
  }
  ::closedir(proc);
  return processes;
}

// The processes of root's tree, as described in the header.
std::vector<ProcessStat> tree_of(pid_t root, const std::vector<ProcessStat>& processes) {
  const pid_t self = ::getpid();
  const pid_t own_session = ::getsid(0);
  std::set<pid_t> others;
  {
    const std::lock_guard<std::mutex> lock(registry_mutex());
    others = live_adapters();
    others.erase(root);
  }
  std::set<pid_t> members;
  for (const ProcessStat& p : processes) {
    if (p.pid == self || others.count(p.pid)) continue;
    const bool orphan_of_an_adapter = p.parent == self && p.session != own_session && !others.count(p.pid);
    if (p.pid == root || p.group == root || p.session == root || orphan_of_an_adapter) members.insert(p.pid);
  }
  // Descendants of any member, to a fixed point.
  for (bool grew = true; grew;) {
    grew = false;
    for (const ProcessStat& p : processes)
      if (!members.count(p.pid) && members.count(p.parent) && p.pid != self && !others.count(p.pid)) {
        members.insert(p.pid);
        grew = true;
      }
  }
  std::vector<ProcessStat> tree;
  for (const ProcessStat& p : processes)
    if (members.count(p.pid)) tree.push_back(p);
  return tree;
}

}  // namespace

void become_subreaper() {
#ifdef __linux__
  static const bool once = [] {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    return true;
  }();
  (void)once;
#endif
}

void register_adapter(pid_t pid) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  live_adapters().insert(pid);
}

void unregister_adapter(pid_t pid) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  live_adapters().erase(pid);
}

void end_process_tree(pid_t root) {
  ::kill(-root, SIGKILL);  // the process group, at once (also where /proc is missing)
  ::kill(root, SIGKILL);
  const pid_t self = ::getpid();
  for (int round = 0; round < 50; ++round) {
    bool alive = false;
    for (const ProcessStat& p : tree_of(root, all_processes())) {
      if (p.parent == self && p.pid != root && p.state == 'Z') {
        ::waitpid(p.pid, nullptr, WNOHANG);  // an orphan re-parented to attnspec
        continue;
      }
      if (p.state == 'Z' || p.state == 'X') continue;
      alive = true;
      ::kill(p.pid, SIGKILL);
    }
    if (!alive) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(round < 10 ? 1 : 10));
  }
}

}  // namespace attnspec
