// Built instead of ucx_transport.cpp when UCX is disabled or missing.
#include "ucx_transport.hpp"

namespace bagua {

Status ucx_transport_create(Exchange &, std::unique_ptr<Transport> *) {
  return fail(BAGUA_ERR_NOT_AVAILABLE, "BAGUA_TRANSPORT=ucx but bagua was built without UCX");
}

}  // namespace bagua
