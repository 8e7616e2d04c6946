// Open-addressing hash tables for the tokenizer's hot paths: token text -> id (keys packed in
// one arena, no per-key allocation) and id pair -> merge (64-bit keys). Linear probing, load
// factor <= 1/2, power-of-two capacity.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace proctor::text {

class FlatTokenMap {
 public:
  void Reserve(size_t n) { Rehash(Capacity(n)); }
  size_t size() const { return size_; }

  // Sets key -> id (a later assignment of the same key wins). Returns the arena offset of key.
  uint32_t Assign(std::string_view key, int32_t id) {
    if ((size_ + 1) * 2 > slots_.size()) Rehash(slots_.empty() ? 64 : slots_.size() * 2);
    uint64_t h = Hash(key);
    size_t i = h & (slots_.size() - 1);
    while (slots_[i].id >= 0) {
      if (slots_[i].hash == h && View(slots_[i]) == key) {
        slots_[i].id = id;
        return slots_[i].offset;
      }
      i = (i + 1) & (slots_.size() - 1);
    }
    uint32_t offset = static_cast<uint32_t>(arena_.size());
    arena_.append(key);
    slots_[i] = {h, offset, static_cast<uint32_t>(key.size()), id};
    ++size_;
    return offset;
  }

  // -1 when absent.
  int32_t Find(std::string_view key) const {
    if (slots_.empty()) return -1;
    uint64_t h = Hash(key);
    size_t i = h & (slots_.size() - 1);
    while (slots_[i].id >= 0) {
      if (slots_[i].hash == h && View(slots_[i]) == key) return slots_[i].id;
      i = (i + 1) & (slots_.size() - 1);
    }
    return -1;
  }

  std::string_view ArenaView(uint32_t offset, uint32_t length) const {
    return std::string_view(arena_).substr(offset, length);
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t offset = 0, length = 0;
    int32_t id = -1;  // -1: empty
  };
  static uint64_t Hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  static size_t Capacity(size_t n) {
    size_t c = 64;
    while (c < n * 2) c *= 2;
    return c;
  }
  std::string_view View(const Slot& s) const { return ArenaView(s.offset, s.length); }
  void Rehash(size_t capacity) {
    if (capacity <= slots_.size()) return;
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(capacity, Slot{});
    for (const Slot& s : old) {
      if (s.id < 0) continue;
      size_t i = s.hash & (capacity - 1);
      while (slots_[i].id >= 0) i = (i + 1) & (capacity - 1);
      slots_[i] = s;
    }
  }

  std::string arena_;
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

// uint64 key -> uint64 value; the key ~0 is reserved (never a valid id pair).
class FlatU64Map {
 public:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  void Reserve(size_t n) {
    size_t c = 64;
    while (c < n * 2) c *= 2;
    Rehash(c);
  }
  void Assign(uint64_t key, uint64_t value) {
    if ((size_ + 1) * 2 > keys_.size()) Rehash(keys_.empty() ? 64 : keys_.size() * 2);
    size_t i = Mix(key) & (keys_.size() - 1);
    while (keys_[i] != kEmpty && keys_[i] != key) i = (i + 1) & (keys_.size() - 1);
    if (keys_[i] == kEmpty) ++size_;
    keys_[i] = key;
    values_[i] = value;
  }
  // nullptr when absent.
  const uint64_t* Find(uint64_t key) const {
    if (keys_.empty()) return nullptr;
    size_t i = Mix(key) & (keys_.size() - 1);
    while (keys_[i] != kEmpty) {
      if (keys_[i] == key) return &values_[i];
      i = (i + 1) & (keys_.size() - 1);
    }
    return nullptr;
  }

 private:
  static uint64_t Mix(uint64_t x) {  // splitmix64 finalizer
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  void Rehash(size_t capacity) {
    if (capacity <= keys_.size()) return;
    std::vector<uint64_t> old_keys, old_values;
    old_keys.swap(keys_);
    old_values.swap(values_);
    keys_.assign(capacity, kEmpty);
    values_.assign(capacity, 0);
    size_ = 0;
    for (size_t j = 0; j < old_keys.size(); ++j) {
      if (old_keys[j] != kEmpty) Assign(old_keys[j], old_values[j]);
    }
  }
  std::vector<uint64_t> keys_, values_;
  size_t size_ = 0;
};

}  // namespace proctor::text
