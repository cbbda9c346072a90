#include "runtime/device_backend.h"

namespace streamrt {
namespace {
DeviceBackend*& slot(DeviceType t) {
  static DeviceBackend* backends[2] = {nullptr, nullptr};  // never destroyed: used at exit too
  return backends[static_cast<int>(t)];
}
}  // namespace

void register_device_backend(DeviceBackend* backend) {
  if (!slot(backend->type())) slot(backend->type()) = backend;
  else delete backend;
}

DeviceBackend* find_device_backend(DeviceType type) { return slot(type); }

}  // namespace streamrt
