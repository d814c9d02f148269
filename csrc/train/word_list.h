// The trainer's list of the words that hold a pair, delta-coded.  Pure C++17.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace storygpt {

// A strictly ascending list of word indices, stored as the differences
// between neighbours in LEB128 bytes (7 bits a byte): in place when they fit
// in 8 bytes (most lists of pairs made by merges hold a word or two), else in
// a heap block that starts with its capacity.  The trainer's lists are
// ascending by construction (docs/bpe_core.md), and most differences take
// one or two bytes: about a third of the memory of 4-byte indices.  16 bytes.
class WordList {
   public:
    WordList() = default;
    WordList(WordList&& other) noexcept { *this = std::move(other); }
    WordList& operator=(WordList&& other) noexcept {
        if (this != &other) {
            release();
            std::memcpy(&data_, &other.data_, sizeof data_);
            size_ = other.size_;
            last_ = other.last_;
            other.size_ = other.last_ = 0;
        }
        return *this;
    }
    WordList(const WordList&) = delete;
    WordList& operator=(const WordList&) = delete;
    ~WordList() { release(); }

    bool empty() const { return size_ == 0; }
    uint32_t back() const { return last_; }  // the last index added (0 when empty)

    // Adds `word`, which must be greater than back() unless the list is empty.
    void push_back(uint32_t word) {
        uint8_t code[5];
        uint32_t n = 0;
        for (uint32_t delta = word - last_;; delta >>= 7) {
            if (delta < 0x80) {
                code[n++] = static_cast<uint8_t>(delta);
                break;
            }
            code[n++] = static_cast<uint8_t>(delta | 0x80);
        }
        const uint32_t need = size_ + n;
        if (need > kInline) {  // the heap block (size_ may still be in place: grow moves it)
            if (need > capacity()) grow(need);
            std::memcpy(block() + kHeader + size_, code, n);
        } else {
            std::memcpy(data_.in_place + size_, code, n);
        }
        size_ = need;
        last_ = word;
    }

    // Calls f(word) for every index, in ascending order.
    template <class F>
    void for_each(F&& f) const {
        const uint8_t* in = bytes();
        const uint8_t* end = in + size_;
        uint32_t word = 0;
        while (in < end) {
            uint32_t delta = 0;
            for (int shift = 0;; shift += 7) {
                const uint8_t b = *in++;
                delta |= static_cast<uint32_t>(b & 0x7f) << shift;
                if (b < 0x80) break;
            }
            word += delta;
            f(word);
        }
    }

   private:
    static constexpr uint32_t kInline = 8;  // bytes held in place (in data_)
    static constexpr size_t kHeader = sizeof(uint32_t);

    bool on_heap() const { return size_ > kInline; }
    uint8_t* block() const { return static_cast<uint8_t*>(data_.block); }
    uint32_t capacity() const {
        if (!on_heap()) return kInline;
        uint32_t c;
        std::memcpy(&c, block(), kHeader);
        return c;
    }
    const uint8_t* bytes() const { return on_heap() ? block() + kHeader : data_.in_place; }
    // Makes room for `need` bytes (more than kInline), moving the bytes to
    // the heap if they were in place; push_back then sets size_ past kInline.
    // Grows by half, from 24 bytes.
    void grow(uint32_t need) {
        const uint32_t old = capacity();
        uint32_t c = old < 24 ? 24 : old + old / 2;
        if (c < need) c = need;
        void* block;
        if (on_heap()) {
            block = std::realloc(data_.block, kHeader + c);
            if (!block) throw std::bad_alloc();
        } else {
            block = std::malloc(kHeader + c);
            if (!block) throw std::bad_alloc();
            std::memcpy(static_cast<uint8_t*>(block) + kHeader, data_.in_place, size_);
        }
        std::memcpy(block, &c, kHeader);
        data_.block = block;
    }
    void release() {
        if (on_heap()) std::free(data_.block);
    }

    union {
        void* block;
        uint8_t in_place[kInline];
    } data_ = {nullptr};
    uint32_t size_ = 0;  // bytes used
    uint32_t last_ = 0;
};

}  // namespace storygpt
