// `attnspec run --jobs N`: a kernel's clauses spread over N worker
// processes. RapidCheck keeps its state in process-wide statics, so clauses
// cannot run on threads of one process; workers are this executable again
// (`run --worker DIR`), started fresh (no fork of a process whose kernel
// library may already hold threads). Each takes the next clause from a
// queue file in DIR, runs it, prints its line and writes its one-clause
// report to DIR; the parent reads the reports back and merges them. Every
// clause draws from its own seed, so the verdicts are those of one process.
#pragma once

#include <string>
#include <vector>

#include "properties/runner.hpp"

namespace attnspec::cli {

// The parent's side: runs `clauses` (in the clause table's order) of
// `kernel` in `jobs` processes, this one and jobs - 1 workers started with
// `worker_arguments` (what `run` gets: kernel, profile, seed, flags; no
// --clause, --json, --shard, --jobs). The queue hands out the backward
// clauses first, the longest (3-4 s each in quick against 1-2 s for most
// forward ones), so that no long clause starts last. `base`: the run's
// report without results (kernel, profile, seed, options, platform,
// shard). Returns the merged report of every clause; a clause whose worker
// ended before reporting it fails, saying how the worker ended.
RunReport run_in_workers(Kernel& kernel, const RunOptions& options, const std::vector<std::string>& worker_arguments,
                         const std::vector<std::string>& clauses, int jobs, const RunReport& base);

// A worker's loop: takes clauses of `clauses` (in the parent's queue
// order) from the queue in `dir` until none is left, printing each line
// and writing each one-clause report to `dir`. Returns whether one failed.
bool serve_clause_queue(Kernel& kernel, const std::string& kernel_name, const KernelPlatform& platform,
                        const RunOptions& options, const std::vector<std::string>& clauses, const std::string& dir);

// The order the queue hands clauses out in.
std::vector<std::string> queue_order(std::vector<std::string> clauses);

// The clauses `options` selects, in the clause table's order (its shard
// of them when sharded): what run_conformance would run.
std::vector<std::string> selected_clauses(const RunOptions& options);

// Worker processes for --jobs by default: the cores this process may use.
int default_jobs();

}  // namespace attnspec::cli
