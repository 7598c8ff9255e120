// CachedArray<T>: the typed, move-only RAII handle the application holds
// (docs/design.md "Core model"). Data is reached only through a scoped access —
// read(), write(), or Runtime::kernel — which emits the hint, pins the object
// (its primary cannot move while pinned), resolves the primary pointer once
// (the paper's one indirection per kernel, III-C "Data Access") and unpins
// at scope end. Destroying the handle, or retire(), frees the object.
//
// An access must not outlive its array, as an iterator must not outlive its
// container.
#pragma once

#include <cstddef>
#include <cstdio>
#include <exception>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "cachedarrays/runtime/runtime.hpp"

namespace cachedarrays {

/// A pinned view of an array's data; unpins when it goes out of scope.
/// Made by CachedArray::read() (ReadAccess) and write() (WriteAccess); it
/// must not outlive its array.
template <typename T, Access A>
class ScopedAccess {
 public:
  /// `const T` for a read access, `T` for a write access.
  using element_type = std::conditional_t<A == Access::read, const T, T>;

  /// Takes over `other`'s pin; `other` then unpins nothing.
  ScopedAccess(ScopedAccess&& other) noexcept
      : object_(std::exchange(other.object_, nullptr)), pin_(other.pin_), span_(other.span_) {}
  ScopedAccess& operator=(ScopedAccess&&) = delete;
  ScopedAccess(const ScopedAccess&) = delete;
  ScopedAccess& operator=(const ScopedAccess&) = delete;
  /// Unpins the object (without taking the runtime's lock).
  ~ScopedAccess() {
    if (object_ != nullptr) Runtime::release(*object_, A, pin_);
  }

  /// The array's elements where they are pinned, valid until the access ends.
  [[nodiscard]] std::span<element_type> span() const noexcept { return span_; }
  /// The first element.
  [[nodiscard]] element_type* data() const noexcept { return span_.data(); }
  /// The number of elements.
  [[nodiscard]] std::size_t size() const noexcept { return span_.size(); }
  /// Iterator to the first element.
  [[nodiscard]] auto begin() const noexcept { return span_.begin(); }
  /// Iterator past the last element.
  [[nodiscard]] auto end() const noexcept { return span_.end(); }
  /// Element `i` (unchecked, as std::span's).
  [[nodiscard]] element_type& operator[](std::size_t i) const noexcept { return span_[i]; }
  /// The access as a span, to pass where a span is expected.
  operator std::span<element_type>() const noexcept {
    return span_;
  }  // NOLINT(google-explicit-constructor): a view converts implicitly, as std::span does

 private:
  template <typename>
  friend class CachedArray;
  // Hints, pins and resolves, as a one-argument kernel traced under the
  // scoped access's name and without an end event.
  ScopedAccess(Runtime& runtime, Object& object, std::size_t count) : object_(&object) {
    Access access = A;
    std::byte* data = nullptr;
    (void)runtime.acquire_all(&object_, &access, &data, &pin_, 1, scoped_access_kernel(A));
    span_ = {reinterpret_cast<element_type*>(data), count};
  }

  Object* object_;
  detail::PinToken pin_ = detail::pin_word;  // where the pin is held
  std::span<element_type> span_;
};

/// The pinned, read-only view CachedArray::read() gives.
template <typename T>
using ReadAccess = ScopedAccess<T, Access::read>;
/// The pinned, writable view CachedArray::write() gives.
template <typename T>
using WriteAccess = ScopedAccess<T, Access::write>;

/// The typed, move-only handle of an array of `count` T's the application
/// holds (Runtime::array). Data is reached only through a scoped access —
/// read(), write(), or Runtime::kernel — which hints, pins the object and
/// resolves its primary pointer once; destroying the handle, or retire(),
/// frees the object. T must be trivially copyable (data moves with memcpy).
template <typename T>
class CachedArray {
  // Data moves between tiers with memcpy, so it must be trivially copyable.
  static_assert(std::is_trivially_copyable_v<T>, "CachedArray<T> needs a trivially copyable T");
  static_assert(!std::is_const_v<T> && !std::is_volatile_v<T>, "use CachedArray<T> with a plain T");

 public:
  using value_type = T;  ///< The element type.

  /// A handle of no array (retired() is true).
  CachedArray() = default;
  /// Takes over `other`'s array; `other` becomes retired (its id stays).
  CachedArray(CachedArray&& other) noexcept
      : runtime_(other.runtime_),
        object_(std::exchange(other.object_, nullptr)),
        count_(std::exchange(other.count_, 0)),
        id_(other.id_) {}
  /// Retires this handle's array, then takes over `other`'s.
  CachedArray& operator=(CachedArray&& other) noexcept {
    if (this != &other) {
      release_object();
      runtime_ = other.runtime_;
      object_ = std::exchange(other.object_, nullptr);
      count_ = std::exchange(other.count_, 0);
      id_ = other.id_;
    }
    return *this;
  }
  CachedArray(const CachedArray&) = delete;
  CachedArray& operator=(const CachedArray&) = delete;
  /// Retires the array (the policy frees it); an access still open then is a
  /// fatal error (the process terminates with a message).
  ~CachedArray() { release_object(); }

  /// The number of elements (0 for a moved-from or default-made handle).
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  /// The array's size in bytes: size() * sizeof(T).
  [[nodiscard]] std::uint64_t bytes() const noexcept { return count_ * sizeof(T); }
  /// True for a handle of no array: retired, moved from, or default-made.
  [[nodiscard]] bool retired() const noexcept { return object_ == nullptr; }
  /// The object's id (stable for the object's life; kept after retire for
  /// messages).
  [[nodiscard]] std::uint64_t id() const noexcept { return id_; }

  /// A read access: hint will_read, pin, resolve. Throws retired_error for
  /// a retired array.
  [[nodiscard]] ReadAccess<T> read() const { return ReadAccess<T>(*runtime_, live_object("read"), count_); }
  /// A write access: hint will_write, pin, resolve; the primary becomes
  /// dirty. Throws retired_error for a retired array.
  [[nodiscard]] WriteAccess<T> write() { return WriteAccess<T>(*runtime_, live_object("write"), count_); }

  /// Hint without an access: about to be used (Hint::will_use).
  void will_use() { hint(Hint::will_use); }
  /// Hint without an access: about to be read (Hint::will_read).
  void will_read() { hint(Hint::will_read); }
  /// Hint without an access: about to be written (Hint::will_write).
  void will_write() { hint(Hint::will_write); }
  /// Hint: not needed for a while (Hint::archive), a candidate to leave fast memory.
  void archive() { hint(Hint::archive); }
  /// Never needed again: handed to the policy (which frees it now or at the
  /// next collect) and this handle becomes retired. Throws pinned_error while
  /// an access is open.
  void retire() { hint(Hint::retire); }
  /// Any hint by its value (Hint::retire as retire()). Throws retired_error
  /// for a retired array.
  void hint(Hint hint) {
    runtime_->hint(live_object(to_string(hint)), hint);
    if (hint == Hint::retire) object_ = nullptr;
  }

  /// The managed object, for policies and tests. Throws retired_error for a
  /// retired array.
  [[nodiscard]] Object& object() const { return live_object("object"); }
  /// The runtime that made the array (undefined for a default-made handle).
  [[nodiscard]] Runtime& runtime() const noexcept { return *runtime_; }

 private:
  friend class Runtime;
  CachedArray(Runtime& runtime, Object& object, std::size_t count)
      : runtime_(&runtime), object_(&object), count_(count), id_(object.id()) {}

  Object& live_object(const char* operation) const {
    if (object_ == nullptr) {
      throw retired_error(std::string("cachedarrays: cannot ") + operation + " array #" + std::to_string(id_) +
                          ": it was retired (or moved from); retire only arrays the program will "
                          "never use again, and create a new array instead");
    }
    return *object_;
  }

  void release_object() noexcept {
    if (object_ == nullptr) return;
    try {
      runtime_->retire(*object_);
    } catch (const std::exception& e) {
      // A destructor cannot report: the only cause is an access that
      // outlives its array, which would leave a dangling pointer.
      std::fprintf(stderr, "cachedarrays: fatal: destroying array #%llu: %s\n", static_cast<unsigned long long>(id_),
                   e.what());
      std::terminate();
    }
    object_ = nullptr;
  }

  Runtime* runtime_ = nullptr;
  Object* object_ = nullptr;
  std::size_t count_ = 0;
  std::uint64_t id_ = 0;
};

template <typename T>
CachedArray<T> Runtime::array(std::size_t count) {
  if (count == 0) {
    throw invalid_argument("cachedarrays: cannot create an array of 0 elements; ask for at least 1");
  }
  if (count > std::numeric_limits<std::uint64_t>::max() / sizeof(T)) {
    throw invalid_argument("cachedarrays: an array of " + std::to_string(count) + " elements of " +
                           std::to_string(sizeof(T)) + " bytes overflows a 64-bit byte count");
  }
  Object& object = create_object(static_cast<std::uint64_t>(count) * sizeof(T));
  return CachedArray<T>(*this, object, count);
}

}  // namespace cachedarrays
