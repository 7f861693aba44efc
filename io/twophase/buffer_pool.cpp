// SPDX-License-Identifier: MIT
#include "buffer_pool.hpp"

#include <algorithm>
#include <new>

namespace volseg::io::twophase::detail {

BufferPool& BufferPool::instance() {
  static BufferPool pool;
  return pool;
}

BufferPool::Buffer BufferPool::take(std::uint64_t size) {
  {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(kept_.begin(), kept_.end(), [&](const Buffer& b) { return b.size >= size; });
    if (it != kept_.end()) {
      Buffer found = std::move(*it);
      kept_.erase(it);
      return found;
    }
  }
  auto* bytes = static_cast<std::byte*>(std::malloc(std::max<std::uint64_t>(size, 1)));
  if (!bytes) throw std::bad_alloc();
  return Buffer{std::unique_ptr<std::byte[], Free>(bytes), size};
}

void BufferPool::give(Buffer buffer) {
  if (!buffer.bytes || buffer.size > kLargest) return;
  std::lock_guard lock(mutex_);
  kept_.push_back(std::move(buffer));
  std::sort(kept_.begin(), kept_.end(), [](const Buffer& a, const Buffer& b) { return a.size > b.size; });
  if (kept_.size() > kKept) kept_.resize(kKept);
}

}  // namespace volseg::io::twophase::detail
