// The event-file writer thread: write() queues a step's values and returns; the thread encodes
// them and appends the framed records with one write(2) per batch, so a crash tears at most the
// record being written and every record before it stays readable.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <thread>

#include "mycel/core/error.h"
#include "mycel/insight/detail.h"

namespace mycel::insight {

namespace {
struct Pending {
  int64_t step;
  double wall_time;
  std::vector<SummaryValue> values;
  std::string serialized;  // set: an Event encoded by the caller (write_event)
};

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

void write_all(int fd, const std::string& path, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      MYCEL_THROW(RuntimeError, "cannot write event file '", path, "': ", std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}
}  // namespace

// Opens `path` for appending and writes the version record, so the file is a valid event file
// from its first moment; returns the descriptor.
static int open_event_file(const std::string& path, uint64_t* size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    MYCEL_THROW(ValueError, "cannot open event file '", path,
                "' for writing: ", std::strerror(errno));
  std::string first;
  detail::frame_record(detail::version_event(now_seconds()), first);
  try {
    write_all(fd, path, first);
  } catch (...) {
    ::close(fd);
    throw;
  }
  *size = first.size();
  return fd;
}

struct EventWriter::Impl {
  std::string path;
  std::vector<std::string> paths;
  uint64_t max_file_size = 0, size = 0, version_size = 0;
  std::function<std::string()> next_path;
  int fd = -1;
  size_t max_pending;
  std::mutex mu;
  std::condition_variable work, space, done;
  std::deque<Pending> queue;
  uint64_t queued = 0, written = 0, waits = 0;
  bool stopping = false, closed = false;
  std::exception_ptr error;  // the thread's first failure, raised in the caller's thread
  std::thread thread;

  void run() {
    std::unique_lock lock(mu);
    for (;;) {
      work.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty()) return;  // stopping, and nothing left
      std::deque<Pending> batch;
      batch.swap(queue);
      space.notify_all();
      lock.unlock();
      std::string bytes;
      try {
        for (const Pending& p : batch) {
          std::string rec;
          detail::frame_record(p.serialized.empty()
                                   ? detail::summary_event(p.step, p.wall_time, p.values)
                                   : p.serialized,
                               rec);
          if (max_file_size && size + bytes.size() > version_size &&
              size + bytes.size() + rec.size() > max_file_size) {
            write_all(fd, path, bytes);
            bytes.clear();
            rotate();
          }
          bytes += rec;
        }
        write_all(fd, path, bytes);
        size += bytes.size();
      } catch (...) {
        lock.lock();
        if (!error) error = std::current_exception();
        written += batch.size();  // given up on: flush() must not wait for them
        done.notify_all();
        continue;
      }
      lock.lock();
      written += batch.size();
      done.notify_all();
    }
  }

  // Closes the full file and starts the next (on the writer thread; path is read under mu).
  void rotate() {
    ::fsync(fd);
    ::close(fd);
    fd = -1;
    std::string next = next_path();
    uint64_t n = 0;
    int f = open_event_file(next, &n);
    std::lock_guard lock(mu);
    fd = f;
    size = version_size = n;
    path = next;
    paths.push_back(next);
  }

  void raise_error() {  // with mu held
    if (!error) return;
    std::exception_ptr e = error;
    error = nullptr;
    std::rethrow_exception(e);
  }
};

EventWriter::EventWriter(const std::string& path, size_t max_pending, uint64_t max_file_size,
                         std::function<std::string()> next_path)
    : impl_(std::make_unique<Impl>()) {
  MYCEL_CHECK(max_file_size == 0 || next_path, ValueError,
              "EventWriter: max_file_size needs a next_path to rotate to");
  impl_->path = path;
  impl_->paths.push_back(path);
  impl_->max_pending = std::max<size_t>(1, max_pending);
  impl_->max_file_size = max_file_size;
  impl_->next_path = std::move(next_path);
  impl_->fd = open_event_file(path, &impl_->size);
  impl_->version_size = impl_->size;
  impl_->thread = std::thread([this] { impl_->run(); });
}

EventWriter::~EventWriter() {
  try {
    close();
  } catch (...) {
  }
}

void EventWriter::write(int64_t step, double wall_time, std::vector<SummaryValue> values) {
  Impl& m = *impl_;
  std::unique_lock lock(m.mu);
  MYCEL_CHECK(!m.closed, ValueError, "event file '", m.path,
              "' is closed; open a new SummaryRecord");
  m.raise_error();
  if (m.queue.size() >= m.max_pending) {
    ++m.waits;
    m.space.wait(lock, [&] { return m.queue.size() < m.max_pending; });
  }
  m.queue.push_back({step, wall_time, std::move(values), {}});
  ++m.queued;
  m.work.notify_one();
}

void EventWriter::write_event(std::string serialized) {
  Impl& m = *impl_;
  std::unique_lock lock(m.mu);
  MYCEL_CHECK(!m.closed, ValueError, "event file '", m.path,
              "' is closed; open a new SummaryRecord");
  m.raise_error();
  m.space.wait(lock, [&] { return m.queue.size() < m.max_pending; });
  m.queue.push_back({0, 0, {}, std::move(serialized)});
  ++m.queued;
  m.work.notify_one();
}

void EventWriter::flush() {
  Impl& m = *impl_;
  std::unique_lock lock(m.mu);
  m.done.wait(lock, [&] { return m.written == m.queued; });
  m.raise_error();
}

void EventWriter::close() {
  Impl& m = *impl_;
  {
    std::unique_lock lock(m.mu);
    if (m.closed) return;
    m.closed = true;
    m.stopping = true;
    m.work.notify_one();
  }
  m.thread.join();  // drains the queue first
  ::fsync(m.fd);
  ::close(m.fd);
  std::unique_lock lock(m.mu);
  m.raise_error();
}

std::string EventWriter::path() const {
  std::unique_lock lock(impl_->mu);
  return impl_->path;
}

std::vector<std::string> EventWriter::paths() const {
  std::unique_lock lock(impl_->mu);
  return impl_->paths;
}

uint64_t EventWriter::num_written() const {
  std::unique_lock lock(impl_->mu);
  return impl_->written;
}

uint64_t EventWriter::num_waits() const {
  std::unique_lock lock(impl_->mu);
  return impl_->waits;
}

}  // namespace mycel::insight
