/* The layout of the PMIx structures that src/pmix/ffi.rs declares by hand,
 * as the system headers define them; compared by a unit test. */
#include <stddef.h>
#include <pmix_server.h>

size_t muster_pmix_layout(size_t *out, size_t n)
{
    size_t v[] = {
        sizeof(pmix_proc_t),
        offsetof(pmix_proc_t, rank),
        sizeof(pmix_data_array_t),
        offsetof(pmix_data_array_t, size),
        offsetof(pmix_data_array_t, array),
        sizeof(pmix_server_module_t),
        offsetof(pmix_server_module_t, client_connected),
        offsetof(pmix_server_module_t, client_finalized),
        offsetof(pmix_server_module_t, abort),
        offsetof(pmix_server_module_t, fence_nb),
        offsetof(pmix_server_module_t, direct_modex),
        PMIX_MAX_NSLEN,
        (size_t)PMIX_RANK_WILDCARD,
        (size_t)PMIX_STRING,
        (size_t)PMIX_UINT16,
        (size_t)PMIX_UINT32,
        (size_t)PMIX_PROC_RANK,
        (size_t)PMIX_BOOL,
        (size_t)PMIX_DATA_ARRAY,
        (size_t)PMIX_INFO,
        (size_t)(PMIX_SUCCESS - PMIX_ERR_NOT_SUPPORTED),
        (size_t)(PMIX_SUCCESS - PMIX_ERROR),
        (size_t)(PMIX_SUCCESS - PMIX_OPERATION_SUCCEEDED),
    };
    size_t count = sizeof v / sizeof v[0];
    for (size_t i = 0; i < n && i < count; i++) {
        out[i] = v[i];
    }
    return count;
}
