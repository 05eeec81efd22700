#include "server/mysql_protocol/row_sink.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace msgq::mysql_protocol {

absl::StatusOr<std::shared_ptr<RowSink>> RowSink::Create(
    std::shared_ptr<StreamSource> source) {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("eventfd: ", strerror(errno)));
  }
  return std::shared_ptr<RowSink>(new RowSink(std::move(source), fd));
}

RowSink::RowSink(std::shared_ptr<StreamSource> source, int wake_fd)
    : source_(std::move(source)), wake_fd_(wake_fd) {}

RowSink::~RowSink() { close(wake_fd_); }

void RowSink::Wake() {
  const uint64_t one = 1;
  // EAGAIN only when the counter is saturated: it is readable anyway.
  (void)!write(wake_fd_, &one, sizeof(one));
}

void RowSink::Send(uint64_t sequence, MessageBatch batch) {
  {
    absl::MutexLock lock(&mu_);
    if (!finished_) {
      batches_.Add(sequence, std::move(batch));
      Wake();
      return;
    }
  }
  // The stream ended: give the messages back at once.
  source_->OnSendFailed(this, std::move(batch));
}

void RowSink::Close(absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (finished_ || closed_.has_value()) return;
  closed_ = std::move(status);
  Wake();
}

RowSink::Ready RowSink::TakeReady() {
  uint64_t counter = 0;
  (void)!read(wake_fd_, &counter, sizeof(counter));
  Ready out;
  absl::MutexLock lock(&mu_);
  out.batches = batches_.TakeReady();
  out.closed = closed_;
  return out;
}

void RowSink::Finish() {
  {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    finished_ = true;
  }
  // Stop being offered batches before handing back the queued ones.
  source_->Unsubscribe(this);
  std::deque<MessageBatch> unsent;
  {
    absl::MutexLock lock(&mu_);
    unsent = batches_.TakeAll();
  }
  for (MessageBatch& batch : unsent) {
    source_->OnSendFailed(this, std::move(batch));
  }
}

}  // namespace msgq::mysql_protocol
