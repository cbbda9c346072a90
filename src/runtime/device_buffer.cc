#include "core/guard.h"
#include "runtime/device_backend.h"

namespace streamrt {

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : device_(o.device_), data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    this->~DeviceBuffer();
    new (this) DeviceBuffer(std::move(o));
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_) find_device_backend(device_)->free(data_);
}

Result<DeviceBuffer> DeviceBuffer::allocate(DeviceType device, size_t bytes) {
  const auto where = [&] { return "DeviceBuffer::allocate of " + std::to_string(bytes) + " bytes"; };
  return guard(where, [&]() -> Result<DeviceBuffer> {
    DeviceBackend* backend = find_device_backend(device);
    if (!backend) return unsupported(std::string("no ") + device_type_name(device) + " backend in this build");
    SRT_RETURN_IF_ERROR(backend->available());
    DeviceBuffer b;
    SRT_ASSIGN_OR_RETURN(b.data_, backend->allocate(bytes));
    b.device_ = device;
    b.size_ = bytes;
    return b;
  });
}

Status DeviceBuffer::copy_from_host(const void* src, size_t bytes) {
  return guard("DeviceBuffer::copy_from_host", [&]() -> Status {
    if (bytes > size_)
      return invalid_argument("copy of " + std::to_string(bytes) + " bytes into a buffer of " + std::to_string(size_));
    return find_device_backend(device_)->copy_to_device(data_, src, bytes);
  });
}

Status DeviceBuffer::copy_to_host(void* dst, size_t bytes) const {
  return guard("DeviceBuffer::copy_to_host", [&]() -> Status {
    if (bytes > size_)
      return invalid_argument("copy of " + std::to_string(bytes) + " bytes out of a buffer of " + std::to_string(size_));
    return find_device_backend(device_)->copy_to_host(dst, data_, bytes);
  });
}

}  // namespace streamrt
