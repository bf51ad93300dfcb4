/* The current bagua_bucket_comm_destroy call compiles in C (the
 * `c-old-destroy-refused` test's control). */
#include <bagua.h>

int destroy_new_style(bagua_bucket_comm_t bc) { return bagua_bucket_comm_destroy(&bc); }
