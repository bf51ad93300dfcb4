/* A caller written for the earlier bagua_bucket_comm_destroy, which took the
 * handle itself: it must not compile (the `c-old-destroy-refused` test
 * expects the compiler to fail). */
#include <bagua.h>

int destroy_old_style(bagua_bucket_comm_t bc) { return bagua_bucket_comm_destroy(bc); }
