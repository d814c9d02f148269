// Pre-tokenization (see pretokenize.h).
#include "pretokenize.h"

#include <stdexcept>

namespace storygpt {

Pattern parse_pattern(const std::string& name) {
    if (name == "simple") return Pattern::Simple;
    if (name == "gpt2") return Pattern::GPT2;
    if (name == "gpt4") return Pattern::GPT4;
    throw std::invalid_argument("unknown pre-tokenization pattern '" + name +
                                "'; expected one of 'gpt2', 'gpt4', 'simple'");
}

const char* pattern_name(Pattern p) {
    switch (p) {
        case Pattern::Simple: return "simple";
        case Pattern::GPT2: return "gpt2";
        case Pattern::GPT4: return "gpt4";
    }
    return "?";
}

namespace {

// Byte classes of the "simple" pattern.
enum : unsigned char { kWord = 0, kPunct = 1, kSpace = 2 };

inline unsigned char simple_class(unsigned char c) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c >= 0x80)
        return kWord;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r') return kSpace;
    return kPunct;
}

void split_simple(std::string_view data, std::vector<size_t>& ends) {
    const auto* s = reinterpret_cast<const unsigned char*>(data.data());
    const size_t n = data.size();
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        unsigned char cls = simple_class(s[i]);
        if (s[i] == ' ' && i + 1 < n && simple_class(s[i + 1]) != kSpace) {
            // one optional leading space before a word or punctuation run
            j = i + 1;
            cls = simple_class(s[j]);
        }
        while (j < n && simple_class(s[j]) == cls) ++j;
        ends.push_back(j);
        i = j;
    }
}

}  // namespace

void split_chunks(std::string_view data, Pattern pattern, std::vector<size_t>& ends) {
    switch (pattern) {
        case Pattern::Simple:
            split_simple(data, ends);
            return;
        case Pattern::GPT2:
        case Pattern::GPT4:
            // TODO(pretokenizer helper): hand-written matchers for the Unicode patterns.
            throw std::logic_error("gpt2/gpt4 pre-tokenization not implemented yet");
    }
}

}  // namespace storygpt
