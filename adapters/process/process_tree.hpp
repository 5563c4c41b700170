// Ending an adapter and everything it started. Killing its process group is
// not enough: a helper the adapter started with setsid() has left both its
// group and its session, and one whose parent exited is no longer its
// descendant. attnspec therefore makes itself a child subreaper (Linux
// PR_SET_CHILD_SUBREAPER), so such orphans are re-parented to it instead of
// to init, and ends the adapter's whole tree: its descendants, its session
// and process group, and the orphans it left with attnspec. Linux only (it
// reads /proc); elsewhere only the process group is ended.
#pragma once

#include <sys/types.h>

namespace attnspec {

// Once per process, before the first adapter starts.
void become_subreaper();

// While an adapter runs, its pid is registered, so that ending one adapter
// never touches another one's tree.
void register_adapter(pid_t pid);
void unregister_adapter(pid_t pid);

// SIGKILL to every process of the adapter's tree (root included, alive or
// not), repeated until none is left; reaps those that were re-parented to
// attnspec. The root itself is left for its owner to reap (its exit status
// is reported).
void end_process_tree(pid_t root);

}  // namespace attnspec
