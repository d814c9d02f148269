#include "common/common.h"

#include <sys/types.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace storygpt {

FileError::FileError(const std::string& path, int error_code, const std::string& what)
    : std::runtime_error(what), path_(path), error_code_(error_code) {}

namespace {
[[noreturn]] void throw_file_error(const std::string& path, const char* doing) {
    const int e = errno;
    throw FileError(path, e, std::string("cannot ") + doing + " file '" + path + "': " + std::strerror(e));
}
}  // namespace

InputFile::InputFile(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "rb")) {
    if (!file_) throw_file_error(path, "open");
    if (fseeko(file_, 0, SEEK_END) == 0) {
        const off_t end = ftello(file_);
        if (end > 0) size_ = static_cast<uint64_t>(end);
    }
    if (fseeko(file_, 0, SEEK_SET) != 0) {
        const int e = errno;
        std::fclose(file_);
        errno = e;
        throw_file_error(path, "read");
    }
}

InputFile::~InputFile() { std::fclose(file_); }

size_t InputFile::read_append(std::string& buf, size_t n) {
    const size_t old = buf.size();
    buf.resize(old + n);
    const size_t got = std::fread(&buf[old], 1, n, file_);
    buf.resize(old + got);
    if (got < n && std::ferror(file_)) throw_file_error(path_, "read");
    return got;
}

int resolve_threads(int n) {
    if (n > 0) return n;
    const unsigned hardware = std::thread::hardware_concurrency();
    return hardware == 0 ? 1 : static_cast<int>(hardware);
}

}  // namespace storygpt
