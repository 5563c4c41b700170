// A kernel that is another kernel with one thing changed: every call goes
// to the inner kernel unless a subclass overrides it. Tests use it to count
// or alter what one built-in kernel sees or returns, and the emulated
// kernels to give a kernel a name of its own, without each restating the
// whole Kernel interface.
#pragma once

#include <memory>
#include <utility>

#include "adapters/kernel.hpp"

namespace attnspec {

class WrappedKernel : public Kernel {
 public:
  explicit WrappedKernel(std::unique_ptr<Kernel> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  KernelFormats formats() const override { return inner_->formats(); }
  Capabilities capabilities() const override { return inner_->capabilities(); }
  KernelResult run(const Problem& problem) override { return inner_->run(problem); }
  KernelResult run_varlen(const VarlenBatch& batch) override { return inner_->run_varlen(batch); }
  KernelResult run_kv_cache(const KvCacheBatch& batch) override { return inner_->run_kv_cache(batch); }
  KernelResult merge(const MergeInput& input) override { return inner_->merge(input); }
  GradientOutputs run_backward(const Problem& problem) override { return inner_->run_backward(problem); }
  std::optional<std::filesystem::path> log_file() const override { return inner_->log_file(); }
  void end_run(bool failed) override { inner_->end_run(failed); }

 private:
  std::unique_ptr<Kernel> inner_;
};

}  // namespace attnspec
