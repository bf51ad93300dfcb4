#pragma once

#include "exchange.hpp"
#include "transport.hpp"

namespace bagua {

// Point-to-point over a UCP worker of its own, among the ranks of `exchange`
// (collective over them), whose allgather exchanges the worker addresses.
// Returns BAGUA_ERR_NOT_AVAILABLE when bagua was built without UCX.
Status ucx_transport_create(Exchange &exchange, std::unique_ptr<Transport> *out);

}  // namespace bagua
